/**
 * Every text the console shows, in one place, ready for translation: a translation is another
 * object of this shape. Functions take what varies (numbers, names) and return the sentence, so a
 * language can order the words its own way. The server's page (the title, the no-script note)
 * reads them too.
 */
export const strings = {
  lang: 'en',
  product: 'Fleet tracker',
  pageTitle: 'Fleet tracker',
  noScript: 'The console needs JavaScript. The API itself is described at /openapi.',
  loading: 'Loading…',

  // sign-in
  signInTitle: 'Sign in',
  signInIntro: 'Sign in with the name and password your administrator gave you.',
  signInName: 'Name',
  signInPassword: 'Password',
  signInButton: 'Sign in',
  signingIn: 'Signing in…',
  signInWrong: 'Wrong name or password.',
  signInMissing: 'Enter your name and password.',
  signInThrottled: (seconds: number) => `Too many attempts. Try again in ${seconds} s.`,
  signInFailed: (status: number) => `Signing in failed (HTTP ${status}). Try again later.`,
  sessionEnded: 'Your session has ended. Sign in again.',
  signedOut: 'You have signed out.',
  networkDown: 'The server cannot be reached. Check the connection and try again.',

  // shell
  skipToContent: 'Skip to content',
  navLabel: 'Views',
  menu: 'Menu',
  navMap: 'Live map',
  navHistory: 'History',
  navShare: 'Share links',
  navAdmin: 'Administration',
  navEvents: 'Events',
  signOut: 'Sign out',
  account: (user: string, account: string) => `${user} · ${account}`,
  roleAdmin: 'administrator',
  notYetTitle: (view: string) => `${view} is not available yet`,
  notYetBody: 'This part of the console is coming in a later version. The live map shows your fleet now.',
  backToMap: 'Back to the live map',

  // live view: the list
  listLabel: 'Devices',
  search: 'Search',
  searchPlaceholder: 'Name, IMEI, serial, plate',
  group: 'Group',
  allGroups: 'All groups',
  state: 'State',
  allStates: 'All states',
  shownOfTotal: (shown: number, total: number) => (shown === total ? `${total} ${total === 1 ? 'device' : 'devices'}` : `${shown} of ${total} devices`),
  noDevices: 'No device is registered to you yet. An administrator can add devices or put you in a group.',
  noMatch: 'No device matches these filters.',
  clearFilters: 'Clear filters',
  loadingDevices: (count: number) => (count === 0 ? 'Loading devices…' : `Loading devices… ${count}`),
  live: 'Live',
  connecting: 'Connecting…',
  reconnecting: 'Reconnecting…',
  noPosition: 'No position yet',
  noFixTime: 'No fix received',

  // states
  states: {
    moving: 'Moving',
    stopped: 'Stopped',
    off: 'Off',
    new: 'New',
    stolen: 'Stolen',
    suspended: 'Suspended',
    unlink: 'Unlinked',
  } as Record<string, string>,
  legend: 'Legend',

  // the map
  mapLabel: 'Map of the devices',
  cluster: (count: number) => `${count} devices here: zoom in`,
  fitAll: 'Show all devices',

  // times and units
  justNow: 'just now',
  minutesAgo: (n: number) => `${n} min ago`,
  hoursAgo: (n: number) => `${n} h ago`,
  daysAgo: (n: number) => `${n} d ago`,
  speedKmh: (kmh: number) => `${Math.round(kmh)} km/h`,
  dbm: (value: number) => `${value} dBm`,

  // the device panel
  back: 'Back to the list',
  details: 'Details',
  latestStatus: 'Latest status',
  newestFixes: 'Newest fixes',
  commands: 'Commands',
  noCommands: 'This model has no commands.',
  commandsLater: 'Sending commands is not available in this version of the console yet.',
  confirmsWith: (message: string) => `Asks for confirmation: “${message}”`,
  confirmsPlain: 'Asks for confirmation before sending.',
  send: 'Send',
  noFixes: 'No fix in the 24 hours before the newest one.',
  loadFailed: 'Could not load this. Try again later.',
  fieldImei: 'IMEI',
  fieldSerial: 'Serial',
  fieldIccid: 'ICCID',
  fieldCreated: 'Added',
  fieldState: 'State',
  fieldConnection: 'Connection',
  connectedSince: (when: string) => `Connected since ${when}`,
  disconnectedSince: (when: string) => `Disconnected since ${when}`,
  neverConnected: 'Never connected',
  fieldNewestFix: 'Newest fix',
  fieldSpeed: 'Speed',
  fieldHeading: 'Heading',
  fieldPosition: 'Position',
  fieldSignal: 'Signal',
  fieldSatellites: 'Satellites',
  fixTime: 'Time',
  fixSpeed: 'Speed',
  fixPlace: 'Position',
  unknown: '—',
}

export type Strings = typeof strings
