export const fixture = "static-fixture";
