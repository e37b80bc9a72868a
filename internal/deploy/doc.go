// Package deploy holds the tests of the shipped kustomize configuration (config/): they
// render it as `kustomize build` does and apply every object to a real kube-apiserver with
// server-side dry run, so a broken or miswired manifest fails `make test`.
package deploy
