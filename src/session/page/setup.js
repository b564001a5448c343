// The first-run setup form: checked here first (the server checks again), sent as JSON to
// POST /setup, which signs the person in; the page then asks GET /session who that is.
'use strict'

const form = document.getElementById('setup')
const fields = ['account', 'name', 'password', 'confirm']
const generalError = document.getElementById('error')
const submit = document.getElementById('submit')

function showFieldError(name, message) {
  const input = document.getElementById(name)
  const slot = document.getElementById(`${name}-error`)
  slot.textContent = message
  slot.hidden = false
  input.setAttribute('aria-invalid', 'true')
}

function clearErrors() {
  for (const name of fields) {
    document.getElementById(name).removeAttribute('aria-invalid')
    const slot = document.getElementById(`${name}-error`)
    slot.textContent = ''
    slot.hidden = true
  }
  generalError.textContent = ''
  generalError.hidden = true
}

function showError(message) {
  generalError.textContent = message
  generalError.hidden = false
}

function focusFirstInvalid() {
  const first = fields.map((name) => document.getElementById(name)).find((input) => input.getAttribute('aria-invalid') === 'true')
  if (first) first.focus()
}

/** the rules the server checks too: names not empty, a password of at least 10; false when one is broken */
function check(values) {
  const problems = []
  if (values.account.trim() === '') problems.push(['account', 'Enter a name for the account.'])
  if (values.name.trim() === '') problems.push(['name', 'Enter the name you will sign in with.'])
  if ([...values.password].length < 10) problems.push(['password', 'The password needs at least 10 characters.'])
  else if (values.confirm !== values.password) problems.push(['confirm', 'The two passwords differ.'])
  for (const [name, message] of problems) showFieldError(name, message)
  return problems.length === 0
}

const LABELS = { account: 'account name', name: 'name', password: 'password' }

async function send(values) {
  const response = await fetch('setup', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // spaces around a name are never meant
    body: JSON.stringify({ token: form.elements.token.value, account: values.account.trim(), name: values.name.trim(), password: values.password }),
    credentials: 'same-origin',
  })
  if (response.ok) return true
  let problem = null
  try {
    problem = await response.json()
  } catch {}
  const fieldErrors = (problem && Array.isArray(problem.errors) ? problem.errors : []).filter((e) => fields.includes(String(e.path).slice(1)))
  for (const e of fieldErrors) {
    const name = String(e.path).slice(1)
    showFieldError(name, `The ${LABELS[name] ?? name} ${e.message}.`)
  }
  if (fieldErrors.length > 0) focusFirstInvalid()
  else showError((problem && problem.detail) || `The server answered ${response.status}; try again.`)
  return false
}

async function signedIn() {
  const response = await fetch('session', { credentials: 'same-origin' })
  if (!response.ok) throw new Error(`GET /session answered ${response.status}`)
  return (await response.json()).user
}

form.addEventListener('submit', async (event) => {
  event.preventDefault()
  clearErrors()
  const values = Object.fromEntries(fields.map((name) => [name, document.getElementById(name).value]))
  if (!check(values)) return focusFirstInvalid()
  submit.disabled = true
  submit.textContent = 'Creating…'
  try {
    if (!(await send(values))) return
    const user = await signedIn()
    // the link is spent: keep it out of the address bar and the history
    history.replaceState(null, '', 'setup')
    form.hidden = true
    document.querySelector('.lead').hidden = true
    document.getElementById('title').textContent = 'You’re signed in'
    document.title = 'Signed in: the fleet tracker is set up'
    document.getElementById('whoami').textContent = `Signed in as ${user.name}, administrator of ${user.account.name}.`
    const done = document.getElementById('done')
    done.hidden = false
    done.focus()
  } catch (error) {
    showError(`Could not reach the server (${error.message}); try again.`)
  } finally {
    submit.disabled = false
    submit.textContent = 'Create the account and sign in'
  }
})
