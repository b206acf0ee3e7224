import { definePlugin } from "@nahida/plugin-sdk";
import { milkyChannel } from "./milky.channel";

/** QQ through the Milky protocol as a channel plugin: its instances are configured by `<INSTANCE>_*` variables (MILKY_BASE_URL, ...). */
export default definePlugin({
  id: "milky",
  register(api) {
    api.channel(milkyChannel);
  },
});
