import Foundation

/// Whether a request may be answered `304 Not Modified`: RFC 9110, section 13.2.2, steps 3
/// and 4, for a resource that always has a current representation.
///
/// Only `GET` and `HEAD` are conditional here. `If-None-Match`, when present, decides alone
/// (weak comparison; `*` matches). Without it, `If-Modified-Since` earns a `304` when the date
/// is an HTTP date, not in the future (a client whose date is ahead of the server's clock would
/// otherwise be told its bytes are current after a change it has not seen), the request carries
/// one such field line, and the current bytes were last modified at or before it. A header that
/// cannot be read is ignored, so a malformed condition costs a full response, never a stale one.
package enum ConditionalRequest {
    /// Whether `request` asks for bytes the client already holds, given the validators of the
    /// bytes served now and the server's clock.
    package static func isNotModified(_ request: ListServerRequest, validators: RepresentationValidators, now: Date) -> Bool {
        guard request.method == "GET" || request.method == "HEAD" else { return false }
        let noneMatch = request.headerValues("If-None-Match")
        if !noneMatch.isEmpty {
            return IfNoneMatch(fieldValues: noneMatch).matches(validators.entityTag)
        }
        let modifiedSince = request.headerValues("If-Modified-Since")
        guard modifiedSince.count == 1, validators.lastModifiedIsUnambiguous,
              let date = HTTPDate.date(from: modifiedSince[0], now: now), date <= now else { return false }
        return validators.lastModified <= date
    }
}
