/**
 * H02 frames from real devices and public sources, each with where it comes from.
 *
 * TRACCAR: github.com/traccar/traccar, src/test/java/org/traccar/protocol/H02ProtocolDecoderTest.java
 * at commit bb3c2858d45ebd61b6fb60595ce17ec16754df2c (Apache-2.0): frames users captured from
 * their devices and posted with their bug reports. Only the frames are used here (test data), not
 * the code, and every expected value in these tests was worked out by hand from the protocol.
 */

/** V1 with the serving cell in decimal (mcc 712 Costa Rica); Traccar test. */
export const V1_COSTA_RICA = '*HQ,4210051415,V1,164549,A,0956.3869,N,08406.7068,W,000.00,000,221215,FFFFFBFF,712,01,0,0,6#'
/** V1 in the `-dd-mm.mmmm` coordinate form (a device in Brazil), speed 2.4 knots; Traccar test. */
export const V1_DASH_COORDINATES = '*HQ,1451316409,V1,030149,A,-23-29.0095,S,-46-51.5852,W,2.4,065,070315,FFFFFFFF#'
/** V1 with an empty validity field and 5 decimals; Traccar test. */
export const V1_EMPTY_VALIDITY = '*HQ,355488020119695,V1,050418,,2827.61232,N,07703.84822,E,0.00,0,031015,FFFEFBFF#'
/** V1 without a decimal point (ddmmmmmm), then fields that are not a cell; Traccar test. */
export const V1_NO_DECIMAL_POINT = '*HQ,5905101893,V1,105759,A,37573392,S,145037022,E,000.00,173,280122,FF7FFBFF,,,9059e2c,8232,4#'
/** V1 with a battery field between course and date, status EEE7FBDF (bit 19: on the backup battery); Traccar test. */
export const V1_BATTERY_FIELD = '*HQ,4210209006,V1,054048,A,2828.2297,N,07733.4332,E,000.5,047,4,080918,EEE7FBDF,4261193,0#'
/** V1 driving at 21.03 knots, status FFFBFFFF (bit 18 at 0), serving cell in hex (mcc 0x106 = 262, Germany); Traccar test. */
export const V1_HEX_CELL = '*HQ,353505220903211,V1,140817,A,5239.3538,N,01003.5292,E,21.03,312,221013,FFFBFFFF,106,14, 201,2173#'
/** V1 of a device without a position yet: everything empty but the status and the cell (hex, mcc 0xF0 = 240); Traccar test. */
export const V1_NO_POSITION = '*HQ,353505510948929,V1,,V,,N,,E,0.00,0,,FFFFF7FF,f0,a,11a0,c0c6#'
/** V1 of a device without a fix: zero time, date and coordinates; Traccar test. */
export const V1_ZEROS = '*HQ,353588020068342,V1,000000,V,0.0000,0,0.0000,0,0.00,0.00,000000,ffffffff,000106,000002,000203,004c87,16#'
/**
 * V1 posted by a user of a device near Delhi, github.com/traccar/traccar issue #746 ("H02 data
 * decoding and interpretation", 2014-06-11); the cell is in hex (0x194 = 404, India).
 */
export const V1_ISSUE_746 = '*HQ,356823036945777,V1,111416,A,2828.1347,N,07703.8008,E,0.00,0,110614,FFFBFFFF,194,65,  96,b78f#'
/** V1 of device 2705171109, sent 15 s before its binary frame BINARY_32_TWIN below; Traccar test. */
export const V1_TWIN = '*HQ,2705171109,V1,213324,A,5002.5849,N,01433.7822,E,0.00,000,140613,FFFFFFFF#'
/** The TH-maker example device of Traccar's test, with CR LF after the frame. */
export const V1_TH_CRLF = '*TH,2020916012,V1,050316,A,2212.8745,N,11346.6574,E,14.28,028,220902,FFFFFBFF#\r\n'

/** V4: the answer DONE to S20 (cut off fuel), then the command's time and the position; Traccar test. */
export const V4_S20_DONE = '*TH,2020916012,V4,S20,DONE,130305,050316,A,2212.8745,N,11346.6574,E,14.28,028,220902,F7FFFBFF#'
/** V4: the answer to S23 (server address); Traccar test. */
export const V4_S23 = '*TH,2020916012,V4,S23,165.165.33.250:8800,130305,050316,A,2212.8745,N,11346.6574,E,14.28,028,220902,FFFFFBFF#'
/** V4: the answer to S1 with status FFFFFBFD (bit 1: the emergency button); Traccar test. */
export const V4_S1_SOS = '*TH,2020916012,V4,S1,OK,pass_word,130305,050316,A,2212.8745,N,11346.6574,E,14.28,028,220902,FFFFFBFD#'

/** NBR: 6 cells of mcc 722 / mnc 310 (Argentina), then a field after the status; Traccar test. */
export const NBR_SIX_CELLS =
  '*HQ,4109179024,NBR,103732,722,310,0,6,8106,32010,23,8101,22007,25,8106,12010,23,8106,22105,22,8101,22012,16,8106,42010,5,100217,FFFFFBFF,5#'
/** NBR with signals in dBm (mcc 234, UK); Traccar test. */
export const NBR_DBM = '*HQ,7401004662,NBR,160453,234,10,0,2,21580,27766,-67,21580,27766,-67,291019,FFFFFBFF,6#'
/** NBR whose time has 69 seconds (as the device sent it); Traccar test. */
export const NBR_BAD_TIME = '*HQ,1400046168,NBR,160169,460,0,1,4,9338,3692,150,9338,3691,145,9338,3690,140,9338,3692,139,180813,FFFFFBFF#'

/** LINK heartbeat: signal 20, 8 satellites, battery 67 %; Traccar test. */
export const LINK_TRACCAR = '*HQ,1600068860,LINK,112137,20,8,67,0,0,081116,FFFFFBFF#'
/**
 * LINK sent by an RF-V8S in answer to S26 (query status), battery 86 %: github.com/traccar/traccar
 * issue #1173 ("Is possible to read power (battery level) on protocol h02?", comment of 2015-08-02).
 */
export const LINK_ISSUE_1173 = '*HQ,7310028651,LINK,073351,100,0,86,0,0,020815,FFFFFFFF#'

/** A heartbeat type this decoder does not read; Traccar test. */
export const XT_HEARTBEAT = '*HQ,356327080425330,XT,1,100#'

/** Binary, 45 bytes, Bogotá (mcc 732), status FFFFFBFD (bit 1 at 0); Traccar test. */
export const BINARY_45_BOGOTA = '24410600082621532131081504419390060740418306000000fffffbfdff0015060000002c02dc0c000000001f'
/** Binary, 45 bytes, Shenzhen (mcc 460, lac 0x262B, cell 0x0F17); Traccar test. */
export const BINARY_45_SHENZHEN = '2441091144271222470112142233983006114026520E000000FFFFFBFFFF0014060000000001CC00262B0F170A'
/** Binary, 32 bytes, of device 2705171109 (see V1_TWIN); Traccar test. */
export const BINARY_32_TWIN = '2427051711092133391406135002584900014337822e000000ffffffffff0000'
/** Binary, 32 bytes, the next frame of the same device 30 s later; Traccar test. */
export const BINARY_32_TWIN_NEXT = '2427051711092134091406135002584900014337822e000000ffffffffff0000'
/** Binary, 42 bytes: an 8-byte id (IMEI 352483084193293 and a pad digit), 24 knots at 138°; Traccar test. */
export const BINARY_42_IMEI = '2435248308419329301047591808172627335900074412294E024138FEFFFFFFFF01120064BA73005ECC'
/** Binary, 48 bytes (a firmware with a longer tail), Casablanca; Traccar test. */
export const BINARY_48_CASABLANCA = '24971305007205201916101533335008000073206976000000effffbffff000252776566060000000000000000000049'

/** Hex (spaces allowed) to bytes. */
export function hex(text: string): Uint8Array {
  const clean = text.replace(/\s/g, '')
  const bytes = new Uint8Array(clean.length / 2)
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(clean.slice(i * 2, i * 2 + 2), 16)
  return bytes
}

export function ascii(text: string): Uint8Array {
  return new TextEncoder().encode(text)
}

/** the protocol tests' one byte joiner */
export { concat } from '../helpers'
