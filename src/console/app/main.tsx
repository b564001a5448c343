/**
 * The console's entry: who is signed in decides between the sign-in page and the console.
 * Bundled with its styles, Leaflet's and its libraries by src/console/build.ts.
 */
import 'leaflet/dist/leaflet.css'
import './styles.css'
import { render } from 'preact'
import { me, loadMe } from './session'
import { strings } from './strings'
import { Shell } from './views/Shell'
import { SignIn } from './views/SignIn'

function App() {
  const user = me.value
  if (user === undefined) return <p class="boot">{strings.loading}</p>
  if (user === null) return <SignIn />
  return <Shell key={user.id} me={user} />
}

document.documentElement.lang = strings.lang
const root = document.getElementById('app')!
// the server's "Loading…" goes: Preact renders into an empty element
root.textContent = ''
render(<App />, root)
void loadMe()
