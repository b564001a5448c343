import { useEffect, useMemo } from 'preact/hooks'
import { ADMIN_TABS, AdminStore, adminHref, adminTab } from '../admin'
import type { Fleet } from '../fleet'
import { route } from '../router'
import { strings } from '../strings'
import type { Me } from '../types'
import { AdminAudit } from './AdminAudit'
import { AdminDevices } from './AdminDevices'
import { AdminGeofences } from './AdminGeofences'
import { AdminGroups } from './AdminGroups'
import { AdminKeys } from './AdminKeys'
import { AdminModels } from './AdminModels'
import { AdminNotifications } from './AdminNotifications'
import { AdminUsers } from './AdminUsers'

const s = strings.admin

/**
 * Administration (#/admin/{section}): the account's devices, users, groups, keys, the model
 * catalogue and the audit log. Admins only: the navigation hides it from members, and a member
 * who opens its address is told so (the API would answer 403 anyway).
 */
export function AdminView({ me, fleet }: { me: Me; fleet: Fleet }) {
  // read again at each visit: another admin may have changed things meanwhile
  const store = useMemo(() => new AdminStore(), [])
  route.value // follow the address: the section is its second part
  const tab = adminTab(location.hash)
  useEffect(() => {
    store.notice.value = null
  }, [tab])
  useEffect(() => {
    document.title = `${s.tabs[tab]} · ${strings.navAdmin} · ${strings.pageTitle}`
  })

  if (me.role !== 'admin') {
    return (
      <main id="content" class="admin-only" tabIndex={-1}>
        <h1>{strings.navAdmin}</h1>
        <p>{s.adminsOnly}</p>
        <p>
          <a href="#/">{strings.backToMap}</a>
        </p>
      </main>
    )
  }

  const props = { store, fleet, me }
  return (
    <main id="content" class="admin" tabIndex={-1}>
      <div class="admin-top">
        <h1>{strings.navAdmin}</h1>
        <nav class="admin-tabs" aria-label={s.sections}>
          <ul>
            {ADMIN_TABS.map((t) => (
              <li key={t}>
                <a href={adminHref(t)} aria-current={t === tab ? 'page' : undefined} data-tab={t}>
                  {s.tabs[t]}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      </div>
      <div class="admin-body">
        <p class="admin-notice" role="status">
          {store.notice.value}
        </p>
        {tab === 'devices' && <AdminDevices {...props} />}
        {tab === 'users' && <AdminUsers {...props} />}
        {tab === 'groups' && <AdminGroups {...props} />}
        {tab === 'keys' && <AdminKeys {...props} />}
        {tab === 'models' && <AdminModels {...props} />}
        {tab === 'geofences' && <AdminGeofences {...props} />}
        {tab === 'notifications' && <AdminNotifications {...props} />}
        {tab === 'audit' && <AdminAudit {...props} />}
      </div>
    </main>
  )
}
