/** `import path from '….pbf' with { type: 'file' }`: Bun resolves it to a path, and embeds the file under `bun build --compile`. */
declare module '*.pbf' {
  const path: string
  export default path
}
