/// Calendar arithmetic for log timestamps, without Foundation's calendars (proleptic Gregorian, UTC).
public enum CivilTime {
    /// Days from 1970-01-01 to a date (H. Hinnant's days_from_civil).
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Seconds since 1970-01-01T00:00:00Z for a date and a time of day.
    public static func seconds(year: Int, month: Int, day: Int, secondsOfDay: Double) -> Double {
        Double(self.days(year: year, month: month, day: day)) * 86_400 + secondsOfDay
    }

    /// Parses an ISO 8601 UTC time such as 2021-05-01T12:30:45.250Z (or with +00:00); nil otherwise.
    public static func parseISO8601(_ text: Substring) -> Double? {
        let chars = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= chars.count else { return nil }
            var value = 0
            for c in chars[start..<(start + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        guard chars.count >= 19, let year = number(0, 4), chars[4] == 45, let month = number(5, 2), chars[7] == 45,
            let day = number(8, 2), chars[10] == 84 || chars[10] == 32, let hour = number(11, 2), chars[13] == 58,
            let minute = number(14, 2), chars[16] == 58, let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < chars.count && chars[index] == 46 {
            var scale = 0.1
            index += 1
            while index < chars.count, chars[index] >= 48 && chars[index] <= 57 {
                fraction += Double(chars[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        var offset = 0
        if index < chars.count {
            switch chars[index] {
            case 90: index += 1  // Z
            case 43, 45:  // +hh:mm / -hh:mm
                guard let h = number(index + 1, 2) else { return nil }
                let m = number(index + 4, 2) ?? number(index + 3, 2) ?? 0
                offset = (h * 3600 + m * 60) * (chars[index] == 45 ? -1 : 1)
                index = chars.count
            default: return nil
            }
        }
        return self.seconds(
            year: year, month: month, day: day,
            secondsOfDay: Double(hour * 3600 + minute * 60 + second) + fraction) - Double(offset)
    }
}

extension CivilTime {
    /// A date from days since 1970-01-01 (H. Hinnant's civil_from_days).
    public static func civil(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// ISO 8601 UTC with milliseconds, for printing times: 2022-09-11T19:15:03.010Z.
public func iso8601(_ seconds: Double) -> String {
    guard seconds.isFinite else { return "\(seconds)" }
    let millis = Int((seconds * 1000).rounded())
    let days = Int((Double(millis) / 86_400_000).rounded(.down))
    let (year, month, day) = CivilTime.civil(days: days)
    let ms = millis - days * 86_400_000
    func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let fraction = ms % 1000
    return "\(year)-\(two(month))-\(two(day))T\(two(ms / 3_600_000)):\(two(ms / 60_000 % 60)):\(two(ms / 1000 % 60))."
        + (fraction < 10 ? "00" : fraction < 100 ? "0" : "") + "\(fraction)Z"
}
