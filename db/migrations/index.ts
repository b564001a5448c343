/**
 * The migrations as text, imported rather than read from a folder, so that `bun build --compile`
 * embeds them in the binary. After `npm run db:generate`, add the new file here
 * (test/db/migrations.test.ts fails until the journal and this list agree).
 */
import journal from './meta/_journal.json'
import init from './0000_init.sql' with { type: 'text' }
import accessVersion from './0001_access_version.sql' with { type: 'text' }
import devicesVersion from './0002_devices_version.sql' with { type: 'text' }
import shareLinkDevices from './0003_share_link_devices.sql' with { type: 'text' }
import lowercaseIds from './0004_lowercase_ids.sql' with { type: 'text' }
import admin from './0005_admin.sql' with { type: 'text' }
import commandsSend from './0006_commands_send.sql' with { type: 'text' }
import deviceStatus from './0007_device_status.sql' with { type: 'text' }
import geofences from './0008_geofences.sql' with { type: 'text' }
import notifications from './0009_notifications.sql' with { type: 'text' }
import notificationsVersion from './0010_notifications_version.sql' with { type: 'text' }
import deviceRulesVersion from './0011_device_rules_version.sql' with { type: 'text' }
import deviceRulesDelete from './0012_device_rules_delete.sql' with { type: 'text' }
import deliveryChannelDue from './0016_delivery_channel_due.sql' with { type: 'text' }
import modelAccount from './0013_model_account.sql' with { type: 'text' }
import eventsSeq from './0014_events_seq.sql' with { type: 'text' }
import shareLinksEndWithCreator from './0015_share_links_end_with_creator.sql' with { type: 'text' }
import devicesModelOptional from './0017_devices_model_optional.sql' with { type: 'text' }
import userEmailAlerts from './0018_user_email_alerts.sql' with { type: 'text' }
import userTimezone from './0019_user_timezone.sql' with { type: 'text' }
import reportSchedules from './0020_report_schedules.sql' with { type: 'text' }

export const migrationFiles: Record<string, string> = {
  '0000_init': init,
  '0001_access_version': accessVersion,
  '0002_devices_version': devicesVersion,
  '0003_share_link_devices': shareLinkDevices,
  '0004_lowercase_ids': lowercaseIds,
  '0005_admin': admin,
  '0006_commands_send': commandsSend,
  '0007_device_status': deviceStatus,
  '0008_geofences': geofences,
  '0009_notifications': notifications,
  '0010_notifications_version': notificationsVersion,
  '0011_device_rules_version': deviceRulesVersion,
  '0012_device_rules_delete': deviceRulesDelete,
  '0016_delivery_channel_due': deliveryChannelDue,
  '0013_model_account': modelAccount,
  '0014_events_seq': eventsSeq,
  '0015_share_links_end_with_creator': shareLinksEndWithCreator,
  '0017_devices_model_optional': devicesModelOptional,
  '0018_user_email_alerts': userEmailAlerts,
  '0019_user_timezone': userTimezone,
  '0020_report_schedules': reportSchedules,
}

export const migrationJournal: { entries: { idx: number; when: number; tag: string; breakpoints: boolean }[] } = journal
