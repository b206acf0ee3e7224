-- The recognised command is a field of the InboundMessage contract now (`message.command`),
-- no longer only `extra.command` beside it. Only rows that carry a command are touched, and
-- `extra` stays for one release so that workers of the previous version still read it.
UPDATE "inbound_messages"
   SET "message" = jsonb_set("message", '{message,command}', "message"->'extra'->'command')
 WHERE "message"->'extra' ? 'command' AND NOT ("message"->'message' ? 'command');
