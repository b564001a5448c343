-- A user's own zone for reports (issue 24): day boundaries and local times; null is UTC.
-- The twin of SQLite's 0019_user_timezone.
ALTER TABLE "users" ADD COLUMN "timezone" text;
