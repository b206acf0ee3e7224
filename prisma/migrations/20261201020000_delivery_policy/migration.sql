-- AlterTable: what a taken-over send does with a part of unknown outcome, and which parts had one.
ALTER TABLE "deliveries" ADD COLUMN "policy" TEXT NOT NULL DEFAULT 'at_least_once',
ADD COLUMN "uncertain_parts" INTEGER[] DEFAULT ARRAY[]::INTEGER[];
