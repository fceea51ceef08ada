//go:build race

package tenant

const manyEndUsers = 100_000
