-- AlterTable (existing rows are numbered in creation order)
ALTER TABLE "deliveries" ADD COLUMN "seq" BIGSERIAL NOT NULL;

-- DropIndex
DROP INDEX "deliveries_target_created_at_idx";

-- CreateIndex
CREATE INDEX "deliveries_target_seq_idx" ON "deliveries"("target", "seq");
