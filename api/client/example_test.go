package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/switchboard-dev/switchboard/api/client"
)

// The example of docs/api-decisions.md; compiled with the tests so it stays true.
func Example() {
	ctx := context.Background()
	api, err := client.New("https://api.switchboard.example/v1", os.Getenv("SWITCHBOARD_API_KEY"), client.Options{})
	if err != nil {
		panic(err)
	}
	perPage := 50
	calls, err := api.ListCallsWithResponse(ctx, &client.ListCallsParams{PerPage: &perPage})
	if err != nil || calls.JSON200 == nil {
		panic(fmt.Sprint(err, calls))
	}
	for _, c := range calls.JSON200.Data {
		fmt.Println(c.PublicId, c.From)
	}
	fmt.Println("requests left this minute:", api.LastRateLimit().Remaining)
}
