// A Socket.IO client for the daemon's tests: connects to the namespace given, with the
// cookie, origin and claimed userId given in the environment, and writes one JSON line per
// thing that happens (connect, connect_error, update, disconnect) to stdout. It never
// reconnects, and exits when its standard input closes.
import { io } from "socket.io-client";

const url = process.env.SOCKET_URL;
const extraHeaders = {};
if (process.env.SOCKET_COOKIE) extraHeaders.Cookie = process.env.SOCKET_COOKIE;
if (process.env.SOCKET_ORIGIN) extraHeaders.Origin = process.env.SOCKET_ORIGIN;
if (process.env.SOCKET_REFERER) extraHeaders.Referer = process.env.SOCKET_REFERER;
const auth = {};
if (process.env.SOCKET_USER_ID) auth.userId = process.env.SOCKET_USER_ID;

// `websocket` connects with WebSocket only (no long-polling first).
const transports = process.env.SOCKET_TRANSPORTS?.split(",") ?? ["polling", "websocket"];

const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const socket = io(url, { extraHeaders, auth, transports, reconnection: false });
socket.on("connect", () => say({ event: "connect" }));
socket.on("connect_error", (err) => {
  say({ event: "connect_error", message: err.message });
  process.exit(0);
});
socket.on("PROVISIONING_UPDATE", (data) => say({ event: "update", data }));
socket.on("disconnect", (reason) => {
  say({ event: "disconnect", reason });
  process.exit(0);
});
process.stdin.on("end", () => {
  socket.close();
  process.exit(0);
});
process.stdin.resume();
