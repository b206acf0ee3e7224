-- CreateIndex
CREATE INDEX "deliveries_target_created_at_idx" ON "deliveries"("target", "created_at");
