/** Patterns of form fields that several protocols' built-in models share (each protocol's model.ts). */

/** an access point name: labels of letters, digits and hyphens, separated by dots (3GPP TS 23.003) */
export const APN_PATTERN = '[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63}){0,7}'
