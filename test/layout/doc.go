// Package layout holds tests of the repository's shape: the shipped binary and the service's
// packages import nothing under test/, only the wiring names *store.Store (every other package
// takes the store's domain interfaces), and README's layout table names every package and
// every subcommand of the binary.
package layout
