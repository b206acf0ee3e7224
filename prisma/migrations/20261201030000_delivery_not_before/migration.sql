-- AlterTable: a rate-limited delivery (and so every later one to its chat) waits until then.
ALTER TABLE "deliveries" ADD COLUMN "not_before" TIMESTAMPTZ(3);
