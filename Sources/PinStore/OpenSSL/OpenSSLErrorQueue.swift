internal import COpenSSL
internal import CPinStoreShims

/// The OpenSSL per-thread error queue.
///
/// Every failing OpenSSL call leaves messages there. They are drained into the thrown
/// ``PinStoreError`` (so the reason reaches the user) or cleared after an expected failure
/// (a signature that does not verify), so no stale message leaks into a later, unrelated call.
package enum OpenSSLErrorQueue {
    /// Removes and returns every queued message, oldest first.
    package static func drain() -> [String] {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages
    }

    /// Removes and returns the (library, reason) codes queued, oldest first.
    static func drainCodes() -> [(library: Int32, reason: Int32)] {
        var codes: [(Int32, Int32)] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            codes.append((CPinStoreShims_ERR_GET_LIB(code), CPinStoreShims_ERR_GET_REASON(code)))
        }
        return codes
    }

    /// Discards every queued message.
    static func clear() {
        ERR_clear_error()
    }

    /// An error carrying whatever OpenSSL queued.
    package static func error(_ code: PinStoreError.Code, _ reason: String, file: String = #fileID, line: Int = #line) -> PinStoreError {
        PinStoreError(code, reason, openSSLErrors: drain(), file: file, line: line)
    }
}
