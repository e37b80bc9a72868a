// Package restore holds the backup and restore drill (restore_test.go): both stores
// backed up under load with hack/backup.sh, destroyed, restored with hack/restore.sh, and the
// service started on them, as docs/upgrades-and-restore.md tells an operator to do.
package restore
