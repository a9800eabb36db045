import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum IPAddressText {
    static func canonical(_ text: String) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return format(AF_INET, &v4)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return format(AF_INET6, &v6)
        }
        return text
    }

    private static func format(_ family: Int32, _ address: UnsafeRawPointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
