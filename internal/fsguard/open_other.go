//go:build !unix

package fsguard

// openNoWait: no such flag outside Unix (and no FIFOs to hang on).
const openNoWait = 0
