import { definePlugin } from "@nahida/plugin-sdk";
import { webChannel } from "./web.channel";

/** The web chat as a channel plugin: its instances are configured by `<INSTANCE>_*` variables (WEB_SECRET, ...). */
export default definePlugin({
  id: "web",
  register(api) {
    api.channel(webChannel);
  },
});
