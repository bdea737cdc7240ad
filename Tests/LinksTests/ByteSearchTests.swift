import Links
import Testing

/// The one byte search of the HTTP and WebSocket code: where a head ends, in a buffer or a slice of one.
@Suite struct ByteSearchTests {
    @Test func aPatternIsFoundFromTheStartOfWhatIsSearched() {
        let bytes = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody".utf8)
        #expect(bytes.offset(of: [13, 10, 13, 10]) == 23)
        #expect(bytes[16...].offset(of: [13, 10, 13, 10]) == 7)
        #expect(bytes.offset(of: [13, 10]) == 14)
        #expect(bytes.offset(of: Array("body".utf8)) == 27)
        #expect(bytes.offset(of: Array("bodyx".utf8)) == nil)
        #expect(bytes[24...].offset(of: [13, 10, 13, 10]) == nil)
        #expect([UInt8]().offset(of: [13, 10, 13, 10]) == nil)
        #expect([UInt8]([13, 10, 13]).offset(of: [13, 10, 13, 10]) == nil)
        #expect(bytes.offset(of: []) == 0)
    }
}
