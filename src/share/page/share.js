// The shared-link page: the link's devices on a map, the track of each on the chosen day (today
// unless the link grants history and the viewer picks another), the day's events when the link
// grants them, and the fixes as they arrive. Everything comes from the API with the link's token as a Bearer token; the live
// stream is read with fetch, because EventSource cannot send an Authorization header.
;(function () {
  'use strict'

  var body = document.body
  var token = new URLSearchParams(location.search).get('token') || ''
  var auth = { Authorization: 'Bearer ' + token }
  var COLORS = ['#1565c0', '#c62828', '#2e7d32', '#6a1b9a', '#ef6c00', '#00838f', '#ad1457', '#4e342e']
  var ENDED = new Error('ended')
  // the server's no-data threshold (src/track, DEFAULT_GAP_THRESHOLD_SECONDS), for fixes that arrive live
  var GAP_THRESHOLD_S = Number(body.dataset.gapThreshold) || 3600
  // what the link granted when the page was served; the API decides each request and the page hides a part it refuses
  var HISTORY = body.dataset.history === 'true'
  var EVENTS = body.dataset.events === 'true'

  var listEl = document.getElementById('devices')
  var noticeEl = document.getElementById('notice')
  var statusEl = document.getElementById('status')
  var devices = new Map() // id → { body, color, marker, track, row, fix: { latitude, longitude, speed, timestamp } }
  var ended = false
  var dayInput = document.getElementById('day')
  var dayNote = document.getElementById('day-note')
  var eventsEl = document.getElementById('events')
  var eventsList = document.getElementById('events-list')
  var eventsNote = document.getElementById('events-note')

  function midnightOf(date) {
    var d = new Date(date)
    d.setHours(0, 0, 0, 0)
    return d
  }
  // the chosen day, as its local midnight
  var day = midnightOf(new Date())

  function isToday() {
    return day.getTime() === midnightOf(new Date()).getTime()
  }

  /** The chosen day as Unix seconds, start and end both inclusive; today ends now. */
  function dayWindow() {
    var from = Math.floor(day.getTime() / 1000)
    var next = new Date(day)
    next.setDate(next.getDate() + 1)
    var to = isToday() ? Math.floor(Date.now() / 1000) : Math.floor(next.getTime() / 1000) - 1
    return { from: from, to: to }
  }

  function isoDay(date) {
    function two(n) { return (n < 10 ? '0' : '') + n }
    return date.getFullYear() + '-' + two(date.getMonth() + 1) + '-' + two(date.getDate())
  }

  var map = L.map('map', { worldCopyJump: true }).setView([20, 0], 2)
  // Offline, tiles fail to load: Leaflet only fires `tileerror`, and markers and tracks still draw.
  L.tileLayer(body.dataset.tileUrl, { maxZoom: 19, attribution: body.dataset.tileAttribution || '' }).addTo(map)

  var expiresAt = new Date(body.dataset.expiresAt)
  if (!isNaN(expiresAt)) {
    document.getElementById('expiry').textContent = 'Shared until ' + expiresAt.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' })
  }

  function api(path) {
    return fetch(path, { headers: auth, cache: 'no-store' }).then(function (response) {
      if (response.status === 401) throw ENDED
      return response
    })
  }

  function setStatus(text, live) {
    statusEl.textContent = text
    statusEl.classList.toggle('live', !!live)
  }

  function notice(text) {
    noticeEl.textContent = text || ''
    noticeEl.hidden = !text
  }

  function showEnded() {
    ended = true
    document.getElementById('view').hidden = true
    document.getElementById('ended').hidden = false
    setStatus('Ended', false)
  }

  function ago(seconds) {
    var s = Math.max(0, Math.round(Date.now() / 1000 - seconds))
    if (s < 60) return 'just now'
    if (s < 3600) return Math.floor(s / 60) + ' min ago'
    if (s < 86400) return Math.floor(s / 3600) + ' h ago'
    return Math.floor(s / 86400) + ' d ago'
  }

  function when(seconds) {
    var date = new Date(seconds * 1000)
    var today = date.toDateString() === new Date().toDateString()
    var text = today ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : date.toLocaleString([], { dateStyle: 'short', timeStyle: 'short' })
    return text + ' (' + ago(seconds) + ')'
  }

  function render(device) {
    var fix = device.fix
    var speed = device.row.querySelector('.speed')
    var updated = device.row.querySelector('.updated')
    speed.textContent = fix && fix.speed != null ? Math.round(fix.speed) + ' km/h' : '– km/h'
    // "Updated" is the time of the newest fix (today's track, or the stream, which starts with each
    // device's newest fix), never the record's updated_at: an import or a disconnection moves that
    if (fix) {
      updated.textContent = 'Updated ' + when(fix.timestamp)
      updated.dateTime = new Date(fix.timestamp * 1000).toISOString()
    } else {
      updated.textContent = device.body.location ? '' : 'No position yet'
      updated.removeAttribute('datetime')
    }
  }

  function place(device, latitude, longitude) {
    var at = [latitude, longitude]
    if (device.marker) return device.marker.setLatLng(at)
    var label = document.createElement('span')
    label.textContent = device.body.alias
    device.marker = L.marker(at, { title: device.body.alias, alt: device.body.alias })
      .bindTooltip(label, { permanent: true, direction: 'top', offset: [0, -40], className: 'alias-label' })
      .addTo(map)
  }

  function addDevice(deviceBody, index) {
    var color = COLORS[index % COLORS.length]
    var row = document.createElement('li')
    row.className = 'device'
    row.dataset.id = deviceBody.id
    var button = document.createElement('button')
    button.type = 'button'
    var dot = document.createElement('span')
    dot.className = 'dot'
    dot.style.background = color
    var alias = document.createElement('span')
    alias.className = 'alias'
    alias.textContent = deviceBody.alias
    var meta = document.createElement('span')
    meta.className = 'meta'
    var speed = document.createElement('span')
    speed.className = 'speed'
    var updated = document.createElement('time')
    updated.className = 'updated'
    meta.append(speed, updated)
    button.append(dot, alias, meta)
    row.append(button)
    listEl.append(row)

    var device = { body: deviceBody, color: color, marker: null, track: null, row: row, fix: null }
    button.addEventListener('click', function () {
      if (device.marker) map.setView(device.marker.getLatLng(), Math.max(map.getZoom(), 15))
    })
    if (deviceBody.location) place(device, deviceBody.location[0], deviceBody.location[1])
    devices.set(deviceBody.id, device)
    render(device)
    return device
  }

  function removeDevice(id) {
    var device = devices.get(id)
    if (device.marker) device.marker.remove()
    if (device.track) device.track.remove()
    device.row.remove()
    devices.delete(id)
  }

  // The chosen day's track, when the link grants history; without it (or without data) the marker is enough.
  // A link spends the history budget of the user who made it (2 requests in flight, with their own keys and other
  // links), and the server's history memory may be taken for a moment: on 429 or 503, wait and retry.
  function loadTrack(device, attempt) {
    if (!HISTORY) return Promise.resolve()
    var shown = day
    var span = dayWindow()
    return api('devices/' + encodeURIComponent(device.body.id) + '/history/route?from=' + span.from + '&to=' + span.to)
      .then(function (response) {
        if ((response.status === 429 || response.status === 503) && (attempt || 0) < 5) {
          var seconds = Number(response.headers.get('Retry-After')) || 1
          return new Promise(function (resolve) { setTimeout(resolve, seconds * 1000) }).then(function () {
            return loadTrack(device, (attempt || 0) + 1)
          })
        }
        return response.ok ? response.json() : null
      })
      .then(function (route) {
        // another day was picked meanwhile, or the device left the link: that day's loop draws its own track
        if (shown !== day || devices.get(device.body.id) !== device) return
        if (!route || !route.points || route.points.length === 0) return
        var points = route.points
        // a live fix may have drawn the start of a line already: the route replaces it (one line a device)
        if (device.track) device.track.remove()
        device.track = L.polyline(lineParts(points, route.gaps || []), { color: device.color, weight: 4, opacity: 0.8 }).addTo(map)
        var last = points[points.length - 1]
        if (isToday() && (!device.fix || device.fix.timestamp < last.timestamp)) update(device, last)
      })
      .catch(function (error) {
        if (error === ENDED) throw error
      })
  }

  // The route's points as the line's parts: never joined across one of the server's reporting gaps
  // (two points both within a gap's start..end), where nothing is known of the way between them.
  function lineParts(points, gaps) {
    var parts = [[]]
    var g = 0
    points.forEach(function (p, i) {
      while (g < gaps.length && gaps[g].end < p.timestamp) g++
      if (i > 0 && g < gaps.length && points[i - 1].timestamp >= gaps[g].start && p.timestamp <= gaps[g].end) parts.push([])
      parts[parts.length - 1].push([p.latitude, p.longitude])
    })
    return parts
  }

  function update(device, fix) {
    if (device.fix && device.fix.timestamp > fix.timestamp) return
    // a fix after a silence longer than the server's no-data threshold starts a new part of the line
    var silent = device.fix && fix.timestamp - device.fix.timestamp > GAP_THRESHOLD_S
    device.fix = { latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed, timestamp: fix.timestamp }
    place(device, fix.latitude, fix.longitude)
    // a live fix extends the track only while today is the day shown
    if (isToday() && fix.timestamp * 1000 >= day.getTime()) {
      if (!device.track) device.track = L.polyline([[]], { color: device.color, weight: 4, opacity: 0.8 }).addTo(map)
      var parts = device.track.getLatLngs()
      if (parts.length === 0 || !Array.isArray(parts[0])) parts = [parts]
      var part = parts[parts.length - 1]
      var tail = part[part.length - 1]
      if (silent && part.length > 0) parts.push((part = []))
      if (!tail || silent || tail.lat !== fix.latitude || tail.lng !== fix.longitude) part.push(L.latLng(fix.latitude, fix.longitude))
      device.track.setLatLngs(parts)
    }
    render(device)
  }

  function fit() {
    var bounds = L.latLngBounds([])
    var tracks = L.latLngBounds([])
    devices.forEach(function (device) {
      if (device.marker) bounds.extend(device.marker.getLatLng())
      if (device.track && device.track.getBounds().isValid()) {
        bounds.extend(device.track.getBounds())
        tracks.extend(device.track.getBounds())
      }
    })
    // another day: its routes, not where the vehicles are now
    if (!isToday() && tracks.isValid()) bounds = tracks
    if (!bounds.isValid()) return
    map.fitBounds(bounds, { padding: [48, 48], maxZoom: 15 })
  }

  // Reads the device list and reconciles the map with it (a patched link may have changed it).
  function sync() {
    return api('devices').then(function (response) {
      if (response.status === 403 || response.status === 404) {
        notice(response.status === 403 ? 'This link does not share the vehicles’ locations.' : 'No vehicles are shared by this link right now.')
        setStatus('Not live', false)
        return false
      }
      if (!response.ok) throw new Error('HTTP ' + response.status)
      return response.json().then(function (list) {
        notice('')
        var wanted = new Set(list.map(function (d) { return d.id }))
        Array.from(devices.keys()).forEach(function (id) {
          if (!wanted.has(id)) removeDevice(id)
        })
        var added = list.filter(function (d) { return !devices.has(d.id) }).map(function (d) { return addDevice(d, devices.size) })
        if (added.length === 0) return true
        fit()
        // one at a time, within the link's history requests in flight
        return added.reduce(function (loaded, device) {
          return loaded.then(function () { return loadTrack(device) })
        }, Promise.resolve()).then(function () {
          fit()
          return true
        })
      })
    })
  }

  // Draws the chosen day's tracks again, one device at a time (the link's history requests in flight are few).
  function loadDay() {
    devices.forEach(function (device) {
      if (device.track) device.track.remove()
      device.track = null
    })
    dayNote.textContent = 'Loading…'
    var shown = day
    return Array.from(devices.values())
      .reduce(function (loaded, device) {
        return loaded.then(function () { return loadTrack(device) })
      }, Promise.resolve())
      .then(function () {
        if (shown !== day) return
        var drawn = Array.from(devices.values()).some(function (d) { return d.track })
        dayNote.textContent = drawn ? '' : 'No route on this day'
        fit()
      })
      .catch(function (error) {
        if (error === ENDED) showEnded()
      })
  }

  var EVENT_NAMES = { sos: 'SOS', power_cut: 'Power cut', overspeed: 'Overspeed', low_battery: 'Low battery', tamper: 'Tamper', vibration: 'Vibration' }
  function eventName(code) {
    if (EVENT_NAMES[code]) return EVENT_NAMES[code]
    var text = String(code).replace(/_/g, ' ')
    return text.charAt(0).toUpperCase() + text.slice(1)
  }

  // The events of the chosen day (with history) or of the last 24 hours (without), newest first.
  var eventsShown = 0
  function loadEvents() {
    if (!EVENTS) return Promise.resolve()
    var asked = ++eventsShown
    var span = HISTORY ? dayWindow() : null
    var query = 'events?limit=100' + (span ? '&from=' + span.from + '&to=' + span.to : '')
    return api(query)
      .then(function (response) {
        if (asked !== eventsShown) return
        if (response.status === 403) {
          eventsEl.hidden = true
          return
        }
        if (!response.ok) {
          eventsNote.textContent = 'The events could not be read (HTTP ' + response.status + ').'
          return
        }
        return response.json().then(function (list) {
          if (asked !== eventsShown) return
          eventsEl.hidden = false
          eventsList.textContent = ''
          var period = HISTORY ? (isToday() ? 'today' : 'on ' + day.toLocaleDateString([], { dateStyle: 'medium' })) : 'in the last 24 hours'
          eventsNote.textContent = list.length === 0 ? 'No events ' + period + '.' : list.length + (list.length === 100 ? '+' : '') + ' event' + (list.length === 1 ? '' : 's') + ' ' + period
          list.forEach(function (event) {
            var item = document.createElement('li')
            var at = document.createElement('time')
            at.dateTime = new Date(event.timestamp * 1000).toISOString()
            at.textContent = new Date(event.timestamp * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
            var what = document.createElement('span')
            what.className = 'what'
            what.textContent = eventName(event.alarm_code)
            var who = document.createElement('span')
            who.className = 'who'
            who.textContent = event.device ? event.device.alias : ''
            item.append(at, what, who)
            eventsList.append(item)
          })
        })
      })
      .catch(function (error) {
        if (error === ENDED) showEnded()
      })
  }

  if (HISTORY) {
    document.getElementById('day-picker').hidden = false
    dayInput.value = isoDay(day)
    dayInput.max = isoDay(new Date())
    dayInput.addEventListener('change', function () {
      var parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(dayInput.value)
      if (!parts) return
      var picked = new Date(Number(parts[1]), Number(parts[2]) - 1, Number(parts[3]))
      if (picked.getTime() > Date.now()) return
      day = picked
      loadDay()
      loadEvents()
    })
  }
  if (EVENTS) {
    eventsEl.hidden = false
    eventsNote.textContent = 'Loading…'
    loadEvents()
  }

  function handleEvent(block) {
    var event = 'message'
    var data = ''
    block.split('\n').forEach(function (line) {
      if (line.indexOf('event:') === 0) event = line.slice(6).trim()
      else if (line.indexOf('data:') === 0) data += line.slice(5).trim()
    })
    if (event === 'alarm' && isToday()) loadEvents()
    if (event !== 'fix' || !data) return
    var fix = JSON.parse(data)
    var device = devices.get(fix.id)
    if (device) update(device, fix)
  }

  // Resolves when the stream ends (the server closes it when the link changes or ends).
  function stream() {
    return api('devices/stream').then(function (response) {
      if (!response.ok || !response.body) throw new Error('HTTP ' + response.status)
      setStatus('Live', true)
      var reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      var buffer = ''
      function read() {
        return reader.read().then(function (chunk) {
          if (chunk.done) return
          buffer = (buffer + chunk.value).replace(/\r\n?/g, '\n')
          var end
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            handleEvent(buffer.slice(0, end))
            buffer = buffer.slice(end + 2)
          }
          return read()
        })
      }
      return read()
    })
  }

  var delay = 1000
  function run() {
    var started = Date.now()
    sync()
      .then(function (streaming) {
        if (!streaming) return new Promise(function (resolve) { setTimeout(resolve, 30000) })
        return stream()
      })
      .catch(function (error) {
        if (error === ENDED) showEnded()
      })
      .then(function () {
        if (ended) return
        setStatus('Reconnecting…', false)
        if (Date.now() - started > 10000) delay = 1000
        setTimeout(run, delay)
        delay = Math.min(delay * 2, 30000)
      })
  }

  setInterval(function () {
    devices.forEach(render)
  }, 30000)
  run()
})()
