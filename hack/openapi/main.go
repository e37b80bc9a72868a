// Command openapi writes the v1 API's OpenAPI description, built from the same route table
// the server serves it from, to a file, so clients can be generated without a running
// server (make generate; hack/verify-generated.sh checks it is current).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/switchboard-dev/switchboard/apiserver"
)

func main() {
	out := flag.String("o", "api/openapi/v1.json", "file to write")
	flag.Parse()
	doc, err := apiserver.PublishedOpenAPI()
	if err == nil {
		err = os.WriteFile(*out, append(doc, '\n'), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}
