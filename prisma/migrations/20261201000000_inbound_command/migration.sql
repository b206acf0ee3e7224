-- The recognised command is a field of the InboundMessage contract now, no longer
-- `extra.command` beside it: move it for rows stored before.
UPDATE "inbound_messages"
   SET "message" = jsonb_set("message" - 'extra', '{message,command}', "message"->'extra'->'command')
 WHERE "message"->'extra' ? 'command';

UPDATE "inbound_messages" SET "message" = "message" - 'extra' WHERE "message" ? 'extra';
