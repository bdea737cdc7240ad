import CZlib
import NavCore
import SystemIO

/// OpenStreetMap's PBF format (the `.osm.pbf` files extracts are downloaded as), read block by block from the
/// file: a header block, then data blocks of nodes (plain or dense), ways and relations, each zlib-compressed
/// or raw. Only what a walking graph needs is kept: node ids, positions and tags; way node lists and tags.
enum OSMPBF {
    /// What went wrong, naming where.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// One data block's nodes and ways, as the reader hands them on.
    struct Block {
        var nodes: [(id: Int64, coordinate: Coordinate, tags: [String: String])] = []
        var ways: [(nodes: [Int64], tags: [String: String])] = []
    }

    /// Which parts of each block to decode.
    struct Wanted: OptionSet {
        let rawValue: Int
        static let nodes = Wanted(rawValue: 1)
        static let ways = Wanted(rawValue: 2)
    }

    /// Whether `head` (a file's first bytes) is a PBF file: a blob header whose type is "OSMHeader".
    static func isPBF(_ head: [UInt8]) -> Bool {
        guard head.count >= 14 else { return false }
        let length = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
        guard length > 0, length < 64 * 1024 else { return false }
        // Field 1 (type), length-delimited, "OSMHeader".
        return head[4] == 0x0A && head[5] == 9 && Array(head[6..<15]) == Array("OSMHeader".utf8)
    }

    /// Reads `file`, calling `visit` with each data block's `wanted` parts, in file order.
    static func read(file: String, wanted: Wanted, visit: (Block) throws -> Void) throws {
        let input: InputFile
        do {
            input = try InputFile(path: file)
        } catch {
            throw Failure(description: "\(file): cannot be read (\(error.reason))")
        }
        defer { input.close() }
        var blockIndex = 0
        while true {
            let lengthBytes = try Self.read(input, 4, file)
            if lengthBytes.isEmpty { return }
            guard lengthBytes.count == 4 else {
                throw Failure(description: "\(file): cut off after block \(blockIndex)")
            }
            let headerLength =
                Int(lengthBytes[0]) << 24 | Int(lengthBytes[1]) << 16 | Int(lengthBytes[2]) << 8
                | Int(lengthBytes[3])
            guard headerLength > 0, headerLength <= 64 * 1024 else {
                throw Failure(description: "\(file): block \(blockIndex) has a header of \(headerLength) bytes")
            }
            let headerBytes = try Self.read(input, headerLength, file)
            guard headerBytes.count == headerLength else {
                throw Failure(description: "\(file): cut off in block \(blockIndex)")
            }
            let (type, dataSize) = try Self.blobHeader(headerBytes, file: file, block: blockIndex)
            guard dataSize <= 32 * 1024 * 1024 else {
                throw Failure(description: "\(file): block \(blockIndex) claims \(dataSize) bytes (at most 32 MB)")
            }
            let blob = try Self.read(input, dataSize, file)
            guard blob.count == dataSize else { throw Failure(description: "\(file): cut off in block \(blockIndex)") }
            let data = try Self.inflate(blob, file: file, block: blockIndex)
            do {
                switch type {
                case "OSMHeader": try Self.checkHeader(data)
                case "OSMData": try visit(try Self.primitiveBlock(data, wanted: wanted))
                default: break  // unknown blob types are skipped, as the format says
                }
            } catch let error as ProtobufReader.Malformed {
                throw Failure(description: "\(file): block \(blockIndex) is malformed (\(error))")
            }
            blockIndex += 1
        }
    }

    private static func read(_ input: InputFile, _ count: Int, _ file: String) throws -> [UInt8] {
        do {
            return try input.read(exactly: count)
        } catch {
            throw Failure(description: "\(file): cannot be read (\(error.reason))")
        }
    }

    private static func blobHeader(_ bytes: [UInt8], file: String, block: Int) throws -> (String, Int) {
        try bytes.withUnsafeBufferPointer { buffer in
            var reader = ProtobufReader(buffer)
            var type = "", size = -1
            do {
                while let (number, wire) = try reader.field() {
                    switch (number, wire) {
                    case (1, .lengthDelimited): type = reader.string(try reader.lengthDelimited())
                    case (3, .varint): size = Int(truncatingIfNeeded: try reader.varint())
                    default: try reader.skip(wire)
                    }
                }
            } catch {
                throw Failure(description: "\(file): block \(block)'s header is malformed (\(error))")
            }
            guard size >= 0 else { throw Failure(description: "\(file): block \(block)'s header has no size") }
            return (type, size)
        }
    }

    /// A blob's content: raw, or zlib-compressed (other compressions are named in the error).
    private static func inflate(_ blob: [UInt8], file: String, block: Int) throws -> [UInt8] {
        try blob.withUnsafeBufferPointer { buffer in
            var reader = ProtobufReader(buffer)
            var raw: Range<Int>?, zlib: Range<Int>?, rawSize = -1
            var other: String?
            do {
                while let (number, wire) = try reader.field() {
                    switch (number, wire) {
                    case (1, .lengthDelimited): raw = try reader.lengthDelimited()
                    case (2, .varint): rawSize = Int(truncatingIfNeeded: try reader.varint())
                    case (3, .lengthDelimited): zlib = try reader.lengthDelimited()
                    case (4, _): other = "LZMA"; try reader.skip(wire)
                    case (6, _): other = "LZ4"; try reader.skip(wire)
                    case (7, _): other = "ZSTD"; try reader.skip(wire)
                    default: try reader.skip(wire)
                    }
                }
            } catch {
                throw Failure(description: "\(file): block \(block) is malformed (\(error))")
            }
            if let raw { return Array(buffer[raw]) }
            guard let zlib else {
                throw Failure(
                    description:
                        "\(file): block \(block) is compressed with \(other ?? "nothing known"); only zlib is read")
            }
            guard rawSize >= 0, rawSize <= 64 * 1024 * 1024 else {
                throw Failure(description: "\(file): block \(block) has no valid raw size")
            }
            var output = [UInt8](repeating: 0, count: rawSize)
            var outputLength = uLongf(rawSize)
            let status = output.withUnsafeMutableBufferPointer { out in
                uncompress(out.baseAddress, &outputLength, buffer.baseAddress! + zlib.lowerBound, uLong(zlib.count))
            }
            guard status == Z_OK, Int(outputLength) == rawSize else {
                throw Failure(description: "\(file): block \(block) does not inflate (zlib status \(status))")
            }
            return output
        }
    }

    /// Refuses files that need features this reader does not have.
    private static func checkHeader(_ data: [UInt8]) throws {
        try data.withUnsafeBufferPointer { buffer in
            var reader = ProtobufReader(buffer)
            while let (number, wire) = try reader.field() {
                if number == 4, wire == .lengthDelimited {
                    let feature = reader.string(try reader.lengthDelimited())
                    guard ["OsmSchema-V0.6", "DenseNodes", "HistoricalInformation"].contains(feature) else {
                        throw Failure(description: "needs the feature \(feature), which this reader does not have")
                    }
                } else {
                    try reader.skip(wire)
                }
            }
        }
    }

    private static func primitiveBlock(_ data: [UInt8], wanted: Wanted) throws -> Block {
        try data.withUnsafeBufferPointer { buffer in
            var reader = ProtobufReader(buffer)
            var strings: [String] = []
            var groups: [Range<Int>] = []
            var granularity: Int64 = 100, latOffset: Int64 = 0, lonOffset: Int64 = 0
            while let (number, wire) = try reader.field() {
                switch (number, wire) {
                case (1, .lengthDelimited):
                    var table = ProtobufReader(buffer, range: try reader.lengthDelimited())
                    while let (field, type) = try table.field() {
                        if field == 1, type == .lengthDelimited {
                            strings.append(table.string(try table.lengthDelimited()))
                        } else {
                            try table.skip(type)
                        }
                    }
                case (2, .lengthDelimited): groups.append(try reader.lengthDelimited())
                case (17, .varint): granularity = Int64(truncatingIfNeeded: try reader.varint())
                case (19, .varint): latOffset = Int64(truncatingIfNeeded: try reader.varint())
                case (20, .varint): lonOffset = Int64(truncatingIfNeeded: try reader.varint())
                default: try reader.skip(wire)
                }
            }
            func string(_ index: UInt64) throws -> String {
                guard index < UInt64(strings.count) else {
                    throw ProtobufReader.Malformed(description: "string \(index) of \(strings.count)")
                }
                return strings[Int(index)]
            }
            func coordinate(_ lat: Int64, _ lon: Int64) -> Coordinate {
                Coordinate(
                    latitude: 1e-9 * Double(latOffset &+ granularity &* lat),
                    longitude: 1e-9 * Double(lonOffset &+ granularity &* lon))
            }
            var block = Block()
            for group in groups {
                var groupReader = ProtobufReader(buffer, range: group)
                while let (number, wire) = try groupReader.field() {
                    switch (number, wire) {
                    case (1, .lengthDelimited) where wanted.contains(.nodes):
                        var node = ProtobufReader(buffer, range: try groupReader.lengthDelimited())
                        var id: Int64 = 0, lat: Int64 = 0, lon: Int64 = 0
                        var keys: [UInt64] = [], values: [UInt64] = []
                        while let (field, type) = try node.field() {
                            switch (field, type) {
                            case (1, .varint): id = ProtobufReader.zigzag(try node.varint())
                            case (2, _): try node.packedVarints(type, into: &keys)
                            case (3, _): try node.packedVarints(type, into: &values)
                            case (8, .varint): lat = ProtobufReader.zigzag(try node.varint())
                            case (9, .varint): lon = ProtobufReader.zigzag(try node.varint())
                            default: try node.skip(type)
                            }
                        }
                        var tags: [String: String] = [:]
                        for (key, value) in zip(keys, values) { tags[try string(key)] = try string(value) }
                        block.nodes.append((id, coordinate(lat, lon), tags))
                    case (2, .lengthDelimited) where wanted.contains(.nodes):
                        var dense = ProtobufReader(buffer, range: try groupReader.lengthDelimited())
                        var ids: [UInt64] = [], lats: [UInt64] = [], lons: [UInt64] = [], keysValues: [UInt64] = []
                        while let (field, type) = try dense.field() {
                            switch field {
                            case 1: try dense.packedVarints(type, into: &ids)
                            case 8: try dense.packedVarints(type, into: &lats)
                            case 9: try dense.packedVarints(type, into: &lons)
                            case 10: try dense.packedVarints(type, into: &keysValues)
                            default: try dense.skip(type)
                            }
                        }
                        guard ids.count == lats.count, ids.count == lons.count else {
                            throw ProtobufReader.Malformed(description: "dense nodes of unequal lengths")
                        }
                        var id: Int64 = 0, lat: Int64 = 0, lon: Int64 = 0
                        var tagIndex = 0
                        for index in ids.indices {
                            id &+= ProtobufReader.zigzag(ids[index])
                            lat &+= ProtobufReader.zigzag(lats[index])
                            lon &+= ProtobufReader.zigzag(lons[index])
                            var tags: [String: String] = [:]
                            while tagIndex < keysValues.count, keysValues[tagIndex] != 0 {
                                guard tagIndex + 1 < keysValues.count else {
                                    throw ProtobufReader.Malformed(description: "a dense node's key without a value")
                                }
                                tags[try string(keysValues[tagIndex])] = try string(keysValues[tagIndex + 1])
                                tagIndex += 2
                            }
                            tagIndex += 1  // the 0 that ends this node's tags
                            block.nodes.append((id, coordinate(lat, lon), tags))
                        }
                    case (3, .lengthDelimited) where wanted.contains(.ways):
                        var way = ProtobufReader(buffer, range: try groupReader.lengthDelimited())
                        var keys: [UInt64] = [], values: [UInt64] = [], refs: [UInt64] = []
                        while let (field, type) = try way.field() {
                            switch field {
                            case 2: try way.packedVarints(type, into: &keys)
                            case 3: try way.packedVarints(type, into: &values)
                            case 8: try way.packedVarints(type, into: &refs)
                            default: try way.skip(type)
                            }
                        }
                        var tags: [String: String] = [:]
                        for (key, value) in zip(keys, values) { tags[try string(key)] = try string(value) }
                        var ref: Int64 = 0
                        let nodes = refs.map { delta -> Int64 in
                            ref &+= ProtobufReader.zigzag(delta)
                            return ref
                        }
                        block.ways.append((nodes, tags))
                    default:
                        try groupReader.skip(wire)
                    }
                }
            }
            return block
        }
    }
}
