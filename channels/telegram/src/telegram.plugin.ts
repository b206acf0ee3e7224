import { definePlugin } from "@nahida/plugin-sdk";
import { telegramChannel } from "./telegram.channel";

/** Telegram as a channel plugin: its instances are configured by `<INSTANCE>_*` variables (TELEGRAM_BOT_TOKEN, ...). */
export default definePlugin({
  id: "telegram",
  register(api) {
    api.channel(telegramChannel);
  },
});
