// Subscribes to the account's live channel with the stock pusher-js client, configured only
// from GET /me and an API key, and prints one JSON line per happening:
//   {"type":"state","state":"connected"} {"type":"subscribed","channel":...}
//   {"type":"event","event":"call.ringing","data":{...}} {"type":"error",...}
// Usage: NODE_PATH=$(hack/ensure-pusher-js.sh) SWITCHBOARD_API=http://127.0.0.1:8080 \
//        SWITCHBOARD_KEY=sbk_... node hack/pusher-listen.js
const Pusher = require("pusher-js");

const api = (process.env.SWITCHBOARD_API || "http://127.0.0.1:8080").replace(/\/$/, "");
const key = process.env.SWITCHBOARD_KEY;
const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");

(async () => {
  const me = await (await fetch(api + "/v1/me", { headers: { Authorization: "Bearer " + key } })).json();
  const rt = me.realtime;
  if (!rt || !rt.enabled) {
    print({ type: "error", error: "the live channel is not enabled", me });
    process.exit(2);
  }
  const pusher = new Pusher(rt.key, {
    cluster: "switchboard", // unused: wsHost wins
    wsHost: rt.host,
    wsPort: rt.port,
    wssPort: rt.port,
    forceTLS: rt.scheme === "wss",
    enabledTransports: ["ws", "wss"],
    disableStats: true,
    channelAuthorization: {
      endpoint: api + "/v1/realtime/auth",
      transport: "ajax",
      headers: { Authorization: "Bearer " + key },
    },
  });
  pusher.connection.bind("state_change", (s) => print({ type: "state", state: s.current }));
  pusher.connection.bind("error", (e) => print({ type: "error", error: e && e.error ? e.error : String(e) }));
  const channel = pusher.subscribe(rt.channel);
  channel.bind("pusher:subscription_succeeded", () => print({ type: "subscribed", channel: rt.channel }));
  channel.bind("pusher:subscription_error", (e) => print({ type: "error", error: e }));
  channel.bind_global((event, data) => {
    if (!event.startsWith("pusher:")) print({ type: "event", event, data });
  });
})().catch((e) => {
  print({ type: "error", error: String(e) });
  process.exit(1);
});
