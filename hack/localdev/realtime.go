package main

import "fmt"

// realtimeBanner prints a snippet that follows the demo account's live channel with pusher-js.
func realtimeBanner(key string) {
	fmt.Printf(`Live channel (Pusher protocol 7 at ws://%[1]s/app/switchboard; events as simulate sends them):
  NODE_PATH=$(hack/ensure-pusher-js.sh) SWITCHBOARD_API=http://%[1]s SWITCHBOARD_KEY=%[2]s node hack/pusher-listen.js

`, apiAddr, key)
}
