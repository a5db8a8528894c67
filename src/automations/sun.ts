// Sunrise and sunset from latitude and longitude, computed locally (no
// network, no table): the NOAA solar calculator's equations (Meeus,
// "Astronomical Algorithms"), with the sun's upper limb at the horizon and
// standard refraction (zenith 90.833°). Good to about a minute between the
// polar circles; beyond them a day may have no sunrise or sunset, and then
// none is given.

const RAD = Math.PI / 180;
const ZENITH = 90.833;

/** UTC ms of sunrise or sunset on the given UTC calendar date, or undefined when the sun does not cross the horizon that day. */
export function sunEvent(event: 'sunrise' | 'sunset', year: number, month: number, day: number, latitude: number, longitude: number): number | undefined {
  const midnight = Date.UTC(year, month - 1, day);
  // Two passes: the sun's position at the first estimate refines the second.
  let minutes = 720 - 4 * longitude;
  for (let pass = 0; pass < 2; pass++) {
    const at = solarPosition(midnight + minutes * 60_000);
    const cosHourAngle = Math.cos(ZENITH * RAD) / (Math.cos(latitude * RAD) * Math.cos(at.declination)) - Math.tan(latitude * RAD) * Math.tan(at.declination);
    if (cosHourAngle > 1 || cosHourAngle < -1) return undefined;
    const hourAngle = Math.acos(cosHourAngle) / RAD;
    const noon = 720 - 4 * longitude - at.equationOfTime;
    minutes = event === 'sunrise' ? noon - 4 * hourAngle : noon + 4 * hourAngle;
  }
  return midnight + Math.round(minutes * 60_000);
}

/** Declination (radians) and equation of time (minutes) at a UTC instant. */
function solarPosition(utcMs: number): { declination: number; equationOfTime: number } {
  const julianDay = utcMs / 86_400_000 + 2440587.5;
  const t = (julianDay - 2451545) / 36525;
  const meanLongitude = mod360(280.46646 + t * (36000.76983 + t * 0.0003032));
  const meanAnomaly = 357.52911 + t * (35999.05029 - 0.0001537 * t);
  const eccentricity = 0.016708634 - t * (0.000042037 + 0.0000001267 * t);
  const center =
    Math.sin(meanAnomaly * RAD) * (1.914602 - t * (0.004817 + 0.000014 * t)) +
    Math.sin(2 * meanAnomaly * RAD) * (0.019993 - 0.000101 * t) +
    Math.sin(3 * meanAnomaly * RAD) * 0.000289;
  const trueLongitude = meanLongitude + center;
  const omega = 125.04 - 1934.136 * t;
  const apparentLongitude = trueLongitude - 0.00569 - 0.00478 * Math.sin(omega * RAD);
  const meanObliquity = 23 + (26 + (21.448 - t * (46.815 + t * (0.00059 - t * 0.001813))) / 60) / 60;
  const obliquity = meanObliquity + 0.00256 * Math.cos(omega * RAD);
  const declination = Math.asin(Math.sin(obliquity * RAD) * Math.sin(apparentLongitude * RAD));
  const y = Math.tan((obliquity / 2) * RAD) ** 2;
  const l0 = meanLongitude * RAD;
  const m = meanAnomaly * RAD;
  const equationOfTime =
    (4 / RAD) *
    (y * Math.sin(2 * l0) - 2 * eccentricity * Math.sin(m) + 4 * eccentricity * y * Math.sin(m) * Math.cos(2 * l0) - 0.5 * y * y * Math.sin(4 * l0) - 1.25 * eccentricity * eccentricity * Math.sin(2 * m));
  return { declination, equationOfTime };
}

function mod360(degrees: number): number {
  return ((degrees % 360) + 360) % 360;
}
