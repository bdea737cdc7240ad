#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The C maths library, reached without Foundation. Package-wide (the logic targets use them); public API speaks Double.
@inline(__always) package func _log(_ x: Double) -> Double { log(x) }
@inline(__always) package func _exp(_ x: Double) -> Double { exp(x) }
@inline(__always) package func _cos(_ x: Double) -> Double { cos(x) }
@inline(__always) package func _sin(_ x: Double) -> Double { sin(x) }
@inline(__always) package func _atan2(_ y: Double, _ x: Double) -> Double { atan2(y, x) }
@inline(__always) package func _fmod(_ x: Double, _ y: Double) -> Double { fmod(x, y) }
@inline(__always) package func _pow(_ x: Double, _ y: Double) -> Double { pow(x, y) }
@inline(__always) package func _asin(_ x: Double) -> Double { asin(x) }
