//go:build !linux

package fsguard

import "os"

func notPseudo(string) error { return nil }

func notPseudoFile(string, *os.File) error { return nil }
