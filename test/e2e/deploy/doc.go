// Package deploy holds the tests of what an operator deploys: the shipped kustomize
// configuration (config/), rendered as `kustomize build` does and applied to a real
// kube-apiserver with server-side dry run, and the metrics endpoint as serve runs it
// (HTTPS, kube-apiserver authentication and authorization).
package deploy
