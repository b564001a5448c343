/**
 * GT06-family frames as real devices sent them, or as the manufacturer's documents print them,
 * each with its source. Test data only (hex, as published); the decoded values the tests assert
 * are worked out from the bytes and the documents, and checked against what the source says
 * where it says something.
 *
 * Sources:
 * - [VL03 doc] Concox, "GPS Tracker Communication Protocol (JM-VL03)" V1.1.2 (2017), as
 *   transcribed in github.com/fcode09/jimi-vl103m, docs/README_VL03_Protocol.md.
 * - [GT06 doc] Concox, "GPS Tracker Communication Protocol (GT06)" V1.8, login example.
 * - [Traccar tests] github.com/traccar/traccar, src/test/java/org/traccar/protocol/
 *   Gt06ProtocolDecoderTest.java: frames users captured from their devices (read at upstream
 *   commit 014cf82 and, for the newer ones, in the fork emmanuelh-dev/traccar at 4090e70).
 * - [Traccar #N] the server logs (device frame, then Traccar's reply) that users posted in
 *   github.com/traccar/traccar/issues/N.
 */

// ---- login (0x01) ----------------------------------------------------------------------------

/** [GT06 doc] IMEI 123456789012345, serial 1; the document's response is `78 78 05 01 00 01 D9 DC 0D 0A`. */
export const DOC_LOGIN = '78 78 0D 01 01 23 45 67 89 01 23 45 00 01 8C DD 0D 0A'
/** [VL03 doc] login with type identification code 0x7000 and time zone/language 0x3201 (GMT+8, language 1), serial 5. */
export const VL03_LOGIN = '78 78 11 01 07 52 53 36 78 90 02 42 70 00 32 01 00 05 12 79 0D 0A'
/** [VL03 doc] the server's response to VL03_LOGIN. */
export const VL03_LOGIN_RESPONSE = '78 78 05 01 00 05 9F F8 0D 0A'
/** [Traccar #554] login with type 0x100F and time zone word 0x190A (GMT-4:00, language 2), serial 2. */
export const ISSUE_554_LOGIN = '787811010864717003664467100f190a0002c6d20d0a'
/** [Traccar #554] Traccar's answer to it. */
export const ISSUE_554_LOGIN_REPLY = '787805010002eb470d0a'
/** [Traccar #2876] login, serial 3. */
export const ISSUE_2876_LOGIN = '78780d010355488020947422000354820d0a'
/** [Traccar #2876] Traccar's answer to it. */
export const ISSUE_2876_LOGIN_REPLY = '787805010003face0d0a'
/**
 * [Traccar tests] a login without serial number and CRC: 8 BCD bytes of IMEI and one more byte,
 * declared length 0x0D as if the serial and CRC were there.
 */
export const LOGIN_WITHOUT_SERIAL = '78780d010359339075005244340d0a'

// ---- positions (0x12, 0x22, 0xA0) ------------------------------------------------------------

/**
 * [Traccar #1727] 0x12: 2016-02-14 20:22:19 UTC (Traccar, in CET, logged 21:22:19), 41.45768 N
 * 2.18602 E, 75 km/h (Traccar: 40.5 knots), course 134, an empty cell. Traccar answered it with
 * `7878051204acaaa20d0a`; the documents ask for no answer.
 */
export const ISSUE_1727_LOCATION = '78781f1210020e141613cc0472ab50003c0a7a4b1486000000000000000004ac36680d0a'
/** [Traccar tests] 0x12 asserted there as 2015-10-20 14:21:11, valid, 54.94535, 24.01762. */
export const TRACCAR_LOCATION = '78781f120f0a140e150bc505e51e780293a9e800540000f601006e0055da00035f240d0a'
/** [Traccar tests] 0x12 with a 4-byte mileage after the cell (0x0041EE10 = 4,320,784 m). */
export const TRACCAR_LOCATION_MILEAGE = '787823120f081b121d37cb01c8e2cc08afd3c020d50201940701d600a1190041ee100576d1470d0a'
/** [VL03 doc] 0x22: 2015-12-29 02:51:05, MCC 460 MNC 0, ACC off, upload mode 0, re-upload. */
export const VL03_LOCATION = '787822220F0C1D023305C9027AC8180C46586000140001CC00287D001F71000001000820860D0A'
/** [Traccar tests] 0xA0 (4G), asserted there with ignition off: MCC 724 MNC 2, LAC 0x912E, 8-byte cell ID 0x0718798D. */
export const TRACCAR_LOCATION_4G = '787829a01707150f2d0ecd01635100041e96d000087c02d4020000912e000000000718798d000e0006ed3ce50d0a'
/** [Traccar tests] 0xA0 (4G), ACC on, upload mode 3 (ACC change). */
export const TRACCAR_LOCATION_4G_ACC_ON = '787829a0170704112226cf0163fe7c0420f6f000091302d402000091290000000007186b8f01030001460d010d0a'

// ---- status (0x13, 0x23) ---------------------------------------------------------------------

/** [VL03 doc] heartbeat: terminal info 0x40, voltage level 4, GSM 4, language 0x0001, serial 0x000F. */
export const VL03_HEARTBEAT = '78780A134004040001000FDCEE0D0A'
/** [VL03 doc] the server's heartbeat response printed beside it (for serial 0x0100). */
export const VL03_HEARTBEAT_RESPONSE = '78 78 05 13 01 00 E1 A0 0D 0A'
/** [Traccar #2133] status: terminal info 0x44 (GPS tracking, charging), level 6, GSM 4, serial 0x0119. */
export const ISSUE_2133_STATUS = '78780a134406040002011938c50d0a'
/** [Traccar #2133] Traccar's answer to it. */
export const ISSUE_2133_STATUS_REPLY = '7878051301196ce00d0a'
/** [Traccar #4213] status: terminal info 0x04, level 6, GSM 3, serial 3. */
export const ISSUE_4213_STATUS = '78780a1304060300020003691c0d0a'
/** [Traccar #4213] Traccar's answer to it. */
export const ISSUE_4213_STATUS_REPLY = '787805130003cae30d0a'
/** [Traccar tests] 0x23 heartbeat: terminal info 0xC0, battery 0x0122 = 2.90 V, GSM 4, serial 8. */
export const TRACCAR_HEARTBEAT = '78780B23C00122040001000818720D0A'

// ---- alarms (0x16, 0x26, 0x27, 0xA4; 0x19, 0xA5) ---------------------------------------------

/** [Traccar tests] 0x16: LBS length 9, terminal info 0x48 (vibration bits), alarm 0x03 vibration. */
export const TRACCAR_ALARM_VIBRATION = '787825160F0C1D0A2B21C8027AC8040C46581000146F0901CC00287D001F714804040301001C84CF0D0A'
/** [Traccar tests] 0x16 without the LBS length byte (Traccar: "VXT01"), asserted there as SOS. */
export const TRACCAR_ALARM_NO_LBS_LENGTH = '7878241617070a150e24ca01fba0040780e177005c0001720253360027db6204e40400004bf1e90d0a'
/** [Traccar tests] 0x16 with a 4-byte cell ID, asserted there as SOS. */
export const TRACCAR_ALARM_WIDE_CELL_SOS = '787826161709130f3a2dcc02c55f2a089f9af9005c210901360481fe066d9b03413e420102035f92fe0d0a'
/** [Traccar tests] 0x16 with a 4-byte cell ID, asserted there with battery level 93. */
export const TRACCAR_ALARM_WIDE_CELL_BATTERY = '78782616170A080C0E24C0027C58AD0C2B8B0100454E0901CC0025030328E7A0005D4B13021EC373170D0A'
/** [Traccar tests] 0x16, LBS length 8 (not counting itself), alarm byte 0x25, asserted there as tampering. */
export const TRACCAR_ALARM_0X25 = '78782516160908063736c0006e70110442fc800000000800000000000000000300002512000473fb0d0a'
/** [Traccar tests] 0x16, alarm byte 0, terminal info 0x7C (bits 111), asserted there as a removal. */
export const TRACCAR_ALARM_TERMINAL_111 = '7878251613020C12141AC5027951430C2A16F60014000900000000001A00007C550300020002F1E70D0A'
/** [VL03 doc] 0x26: not positioned, terminal info 0x80, alarm 0x13 (tamper), language 2, serial 0x000C. */
export const VL03_ALARM = '787825260F0C1D030B26C9027AC8180C4658600004000901CC00287D001F718004041302000C472A0D0A'
/** [VL03 doc] the server's 0x26 response printed beside it (for serial 0x001C). */
export const VL03_ALARM_RESPONSE = '78780526001C9D860D0A'
/** [Traccar tests] 0x26, LBS length 8, alarm byte 0x0C, asserted there as tampering. */
export const TRACCAR_ALARM_0X0C = '78782526160913063918c002780fab0c44750f00040008027f14084c0038420600030c020007398e0d0a'
/** [VL03 doc] 0x27: empty cell, terminal info 0x80, voltage level 2, alarm 0x0C, fence 0xFF (none). */
export const VL03_ALARM_FENCE = '78782627100419092D07C5027AC91C0C4658000005370900000000000000008002000C01FF00004DF60D0A'
/** [Traccar tests] 0x27 with a 2-byte MNC (MCC 0x8136: 310, MNC 0x0104: 260), LBS length 10. */
export const TRACCAR_ALARM_FENCE = '78782727110c0b0e170f850450059107f461ae001c7e0a81360104cb8a00bef32806030c02ff000316b10d0a'
/** [Traccar tests] 0xA4 (4G): MCC 0x81CC (460, 2-byte MNC 1), LAC 0x260E, 8-byte cell ID 0x0615F801, alarm 0x11, fence 0xFF. */
export const TRACCAR_ALARM_4G = '78782EA4110C0C02281BF6026C18720C38D22800149C1181CC00010000260E000000000615F8012C05041102FF001058FD0D0A'
/** [Traccar tests] 0x19: cell only (MCC 655), terminal info 0x20 (SOS bits), alarm 0x01 SOS. */
export const TRACCAR_CELL_ALARM = '78781219028f0a29e10036f12003040102000875dc0d0a'
/** [Traccar tests] 0xA5 (4G): cell only, alarm 0x13, asserted there as tampering. */
export const TRACCAR_CELL_ALARM_4G = '787819a5012ed0000075df000000000098661502050413000019a12b0d0a'
/** [Traccar tests] 0xA5 (4G) with no alarm. */
export const TRACCAR_CELL_STATUS_4G = '787819a501cc0000009191000000000906170304050400010005f44d0d0a'

// ---- information (0x94) ----------------------------------------------------------------------

/** [Traccar tests] 0x94 type 0x0A: IMEI, IMSI 520050218721401, ICCID 8966051912408052452 (asserted there). */
export const TRACCAR_INFO_ICCID = '79790020940a035985708236675805200502187214018966051912408052452f000355560d0a'
/** [Traccar #4213] 0x94 type 0x0A, sent after login. */
export const ISSUE_4213_INFO_ICCID = '79790020940a035160808482034403340201998760788952020617251318615f000253a60d0a'
/** [Traccar tests] 0x94 type 0x00: external voltage 0x00ED = 2.37 V. */
export const TRACCAR_INFO_VOLTAGE = '79790008940000ed0289d6860d0a'
/** [Traccar tests] 0x94 in a 0x7878 frame, 2 data bytes: 0x04EB = 12.59 V. */
export const TRACCAR_INFO_VOLTAGE_SHORT = '7878079404eb001c705d0d0a'
/** [Traccar tests] 0x94 type 0x05 after a 6-byte date: flags 0x03, asserted there as door open. */
export const TRACCAR_INFO_DOOR = '7979000d940516090908081c030defbd2d0d0a'
/** [Traccar tests] 0x94 type 0x05: flags 0x00. */
export const TRACCAR_INFO_DOOR_CLOSED = '7979000794050000c9b63e0d0a'
/** [Traccar tests] 0x94 type 0x0D, fuel sensor after a 6-byte date: `!AIOIL,02,008.290,029.600,519J,0400,008.430,0,00,AB`. */
export const TRACCAR_INFO_FUEL = '7979003F940D110315102A202141494F494C2C30322C3030382E3239302C3032392E3630302C3531394A2C303430302C3030382E3433302C302C30302C4142001678EA0D0A'
/** [Traccar tests] 0x94 type 0x04, the status text; it ends with `ICCID=8997103101008959042F;MODE=...`. */
export const TRACCAR_INFO_STATUS_TEXT =
  '797900a59404414c4d313d34353b414c4d323d44353b414c4d333d35353b535441313d34303b4459443d30313b534f533d303538353036313536372c2c3b43454e5445523d3b46454e43453d46656e63652c4f46462c302c302e3030303030302c302e3030303030302c3330302c494e206f72204f55542c303b49434349443d38393937313033313031303038393539303432463b4d4f44453d4d4f44452c312c3138303b0008f65e0d0a'

// ---- cells and Wi-Fi (0x11, 0x28, 0x2C, 0xA1, 0xA2) ------------------------------------------

/**
 * [Traccar #1973] 0x11 LBS: declares length 0x0A but is 0x13 long, with the CRC of the bytes sent
 * right ("a message with incorrect length", said the maintainer): date 2016-05-24 10:20:46,
 * MCC 602 MNC 2, LAC 0x0516, cell 0x001F05.
 */
export const ISSUE_1973_WRONG_LENGTH = '78780a111005180a142e025a020516001f0500023ebf0d0a'
/** [VL03 doc] 0x28: 2016-01-13 02:02:02, MCC 460 MNC 0, four cells and three empty slots, TA 0xFF. */
export const VL03_CELLS = '78783B2810010D02020201CC00287D001F713E287D001F7231287D001E232D287D001F4018000000000000000000000000000000000000FF00020005B14B0D0A'
/** [Traccar tests] 0x2C: 7 cells (MCC 310 MNC 4), TA 7, one Wi-Fi access point 00:18:01:eb:40:39. */
export const TRACCAR_CELLS_WIFI = '7878412c11030b011c1f013604cb8a00b17754cb8a00bef357cb8a00b73f5fcb8900b0e25fcb8900b6655fcb8a00b74960cb8a00b178620701001801eb40393800bbbde10d0a'
/** [Traccar tests] 0xA1 (4G): 7 cells, MCC 460 MNC 1, LAC 0x25FC, 8-byte cell ID 0x0618C102. */
export const TRACCAR_CELLS_4G =
  '78786CA1110B0413093801CC01000025FC000000000618C10201000025FC000000000618C10201000025FC000000000618C10201000025FC000000000618C10201000025FC000000000618C10201000025FC000000000618C10201000025FC000000000618C10201FF0002000541D70D0A'
/** [Traccar tests] 0xA2 (4G): 7 cells, 8 Wi-Fi access points. */
export const TRACCAR_CELLS_WIFI_4G =
  '7878A3A2110B0603201501CC010000254E000000000615F804000000254E000000000615F804000000254E000000000615F804000000254E000000000615F804000000254E000000000615F804000000254E000000000615F804000000254E000000000615F80400FF08F483CD4DF4C0D750BD5F8BC5CECFB0D59DAFB459CDA8574E8424C6CC50BD5F6C7E1CC9B0D59D8AA718C90087363040E0C83496727B4DE4C7002919670D0A'

// ---- time (0x8A) -----------------------------------------------------------------------------

/** [VL03 doc] time calibration request, serial 6. */
export const VL03_TIME_REQUEST = '7878058A000688290D0A'
/** [VL03 doc] the server's answer: 2015-12-29 00:00:21 UTC, serial 6. */
export const VL03_TIME_RESPONSE = '78780B8A0F0C1D0000150006F0860D0A'

// ---- a stream ----------------------------------------------------------------------------------

/**
 * [Traccar #1532] what one GT06N sent in a single TCP read: two status packets and eleven 0x12
 * positions back to back.
 */
export const ISSUE_1532_STREAM =
  '78780a1344060400020141e6080d0a78780a1346060400020142e3280d0a78781f120f0b10172113cc02139338084da5b000d52701945a100500f00d0143ed9a0d0a78781f120f0b10172213cc021394c4084da6300dd40b01945a100500f00d014428b40d0a78781f120f0b10172231cd02139f2c084da8a017d40901945a100500f00d014506120d0a78781f120f0b10172313cd0213aed4084da65025d55e01945a100500f00d0146536d0d0a78781f120f0b10172331cd0213c380084da2d02bd55d01945a100500f00d0147325f0d0a78780a134606020002014877ea0d0a78781f120f0b10172413cb0213dd24084d9f5035d56601945a100500f00d0149d31e0d0a78781f120f0b10172431cc0213f8dc084d9ca033d40201945a100500f00d014a1fd30d0a78781f120f0b10172513cb02141378084d9d6032d56601945a100500f00d014ba5100d0a78781f120f0b10172531cb02142dfc084d9ee02fd40701945a100500f00d014c85750d0a78781f120f0b10172613cc021443d8084da22024d40801945a100500f00d014d2fa80d0a'
