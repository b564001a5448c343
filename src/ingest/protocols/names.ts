/**
 * The names of the protocols this server speaks, alone: what the console's model editor offers for
 * a model's protocol without bundling the decoders. index.ts's PROTOCOLS is the list itself; a test
 * (test/admin/models.test.ts) keeps the two equal.
 */
export const PROTOCOL_NAMES = ['osmand', 'gt06', 'teltonika', 'h02', 'gl200', 'jt808', 'meitrack', 'gps103', 'watch'] as const
