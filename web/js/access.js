// The permanent banner of a server open to anyone who reaches it (started with
// --insecure-no-auth on an address other machines can reach), as Syncthing keeps one up for
// a GUI without a password. GET /api/server says how this server is reached.
import { $ } from "./dom.js";
import { api } from "./api.js";

export async function showAccess() {
  const server = await api("GET", "/api/server").catch(() => null);
  const open = Boolean(server && server.access === "open");
  const warning = $("#open-access");
  warning.hidden = !open;
  if (open) {
    warning.textContent = "This server runs with --insecure-no-auth: anyone who can reach it " +
      "can see, trash and restore your photos. Restart it without that flag to require its " +
      "access token (mediadex token prints it).";
  }
}
