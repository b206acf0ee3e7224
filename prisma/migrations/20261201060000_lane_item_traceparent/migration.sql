-- AlterTable: the W3C traceparent of the span that appended the item (README, Tracing),
-- NULL when tracing is off. Lane wake jobs are de-duplicated per lane and a run takes many
-- items, so the job cannot carry each message's trace; the item does.
ALTER TABLE "lane_items" ADD COLUMN "traceparent" TEXT;
