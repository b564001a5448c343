-- Scheduled reports and their runs (issue 24). The twin of SQLite's 0020_report_schedules.
CREATE TABLE "report_schedules" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL REFERENCES "accounts"("id") ON DELETE cascade,
	"user_id" text NOT NULL REFERENCES "users"("id") ON DELETE cascade,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"devices" text DEFAULT '[]' NOT NULL,
	"groups" text DEFAULT '[]' NOT NULL,
	"period" text NOT NULL,
	"at" text NOT NULL,
	"tz" text NOT NULL,
	"format" text NOT NULL,
	"recipients" text DEFAULT '[]' NOT NULL,
	"webhook_id" text REFERENCES "notifications"("id") ON DELETE set null,
	"enabled" boolean DEFAULT true NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "report_schedules_account_name" ON "report_schedules" ("account_id","name","id");--> statement-breakpoint
CREATE INDEX "report_schedules_user" ON "report_schedules" ("user_id");--> statement-breakpoint
CREATE TABLE "report_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"schedule_id" text NOT NULL REFERENCES "report_schedules"("id") ON DELETE cascade,
	"period_key" text,
	"period_from" bigint NOT NULL,
	"period_to" bigint NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error" text,
	"next_attempt_at" bigint,
	"created_at" bigint NOT NULL,
	"sent_at" bigint
);
--> statement-breakpoint
CREATE UNIQUE INDEX "report_runs_period" ON "report_runs" ("period_key");--> statement-breakpoint
CREATE INDEX "report_runs_schedule" ON "report_runs" ("schedule_id","created_at");--> statement-breakpoint
CREATE INDEX "report_runs_due" ON "report_runs" ("status","next_attempt_at");
