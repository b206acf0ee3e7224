-- CreateIndex (runs resolve their lane to its sessions)
CREATE INDEX "sessions_lane_key_idx" ON "sessions"("lane_key");
