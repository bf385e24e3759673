package main

import "fmt"

// plural is n followed by one (n == 1) or many: plural(1, "prompt
// exceeds", "prompts exceed") is "1 prompt exceeds".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
