//go:build !race

package tenant

// manyEndUsers is how many distinct end users TestMillionEndUsersStayBounded
// sends: a million, or with the race detector (ten times slower) 100,000.
const manyEndUsers = 1_000_000
