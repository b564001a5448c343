// `import path from '…' with { type: 'file' }`: Bun gives the file's path (inside the executable
// under `bun build --compile`, which embeds the file). These are the setup page's files.
declare module '*/page/setup.js' {
  const path: string
  export default path
}
declare module '*/page/setup.css' {
  const path: string
  export default path
}
