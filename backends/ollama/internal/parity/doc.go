// Package parity holds an integration test comparing greedy generations
// through an Ollama server with the native gomlx backend on the same
// weights. It is a separate package so that the ollama package's own tests
// do not depend on gomlx.
package parity
