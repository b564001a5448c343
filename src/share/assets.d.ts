// `import path from '…' with { type: 'file' }`: Bun gives the file's path (inside the executable
// under `bun build --compile`, which embeds the file). These are the share page's files. (An
// .html import is typed by bun-types as an HTML bundle; page.ts casts it to the path it is.)
declare module 'leaflet/dist/leaflet.js' {
  const path: string
  export default path
}
declare module 'leaflet/dist/leaflet.css' {
  const path: string
  export default path
}
declare module 'leaflet/dist/images/*.png' {
  const path: string
  export default path
}
declare module '*/page/share.js' {
  const path: string
  export default path
}
declare module '*/page/share.css' {
  const path: string
  export default path
}
