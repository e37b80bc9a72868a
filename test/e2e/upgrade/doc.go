// Package upgrade holds the upgrade tests (upgrade_test.go): the previous release's
// binary (Makefile PREVIOUS_RELEASE, built by hack/previous-release.sh) run against this
// release's schema, and a rolling upgrade from two previous-release replicas to this release
// under load. docs/upgrades-and-restore.md states the rule they hold the tree to.
package upgrade
