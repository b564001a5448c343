/**
 * Receivers for email and Telegram channels in tests, on 127.0.0.1 with a port of their own: a
 * real SMTP server (smtp-server, plain SMTP with AUTH as mailer/hunter2) that keeps each mail
 * raw, and a fake Telegram Bot API (Bun.serve) that keeps each call.
 */
import { SMTPServer } from 'smtp-server'

export interface Smtp {
  url: string
  mails: { from: string; to: string[]; raw: string }[]
  /** SMTP replies to give instead of accepting the next mails: [code, text] */
  refusals: [number, string][]
  users: string[]
  close(): Promise<void>
}

export async function startSmtp(): Promise<Smtp> {
  const mails: Smtp['mails'] = []
  const refusals: Smtp['refusals'] = []
  const users: string[] = []
  const server = new SMTPServer({
    // plain SMTP on loopback: the test's server has no certificate to offer
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: true,
    logger: false,
    onAuth(auth, _session, callback) {
      users.push(auth.username ?? '')
      if (auth.username === 'mailer' && auth.password === 'hunter2') callback(null, { user: auth.username })
      else callback(new Error('bad credentials'))
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        const refusal = refusals.shift()
        if (refusal) {
          const error = new Error(refusal[1]) as Error & { responseCode: number }
          error.responseCode = refusal[0]
          return callback(error)
        }
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        })
        callback()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as { port: number }).port
  return {
    url: `smtp://mailer:hunter2@127.0.0.1:${port}`,
    mails,
    refusals,
    users,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export interface FakeTelegram {
  url: string
  calls: { path: string; json: { chat_id: string; text: string } }[]
  /** statuses to answer with before answering ok */
  failures: number[]
  stop(): void
}

export function startTelegram(): FakeTelegram {
  const calls: FakeTelegram['calls'] = []
  const failures: number[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      calls.push({ path, json: (await request.json()) as FakeTelegram['calls'][number]['json'] })
      const failure = failures.shift()
      if (failure !== undefined) return Response.json({ ok: false, error_code: failure, description: 'Internal Server Error' }, { status: failure })
      return Response.json({ ok: true, result: { message_id: calls.length } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, calls, failures, stop: () => server.stop(true) }
}
