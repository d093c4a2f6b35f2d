// Text form of the IR: printing. The parser (parser.h) reads it back; print(parse(print(g))) == print(g).
//
//   graph softmax(%x: f32[s0, s1]) {
//     %m = amax(%x) {axes=[1], keepdim=true} : f32[s0, 1]
//     %d = sub(%x, %m) : f32[s0, s1]
//     ...
//     return %out
//   }
//
// Inputs with strides: `%x: f32[s0, s1] strides [1, s0]`. Attribute values: ints, floats (always with '.', 'e',
// inf or nan so they read back as floats), true/false, dtype names, [lists], size expressions, "strings".
#pragma once

#include <string>

#include "autofuse/ir/graph.h"

namespace autofuse {

/// The whole graph as IR text, ending in a newline.
std::string print_graph(const Graph& g);
/// One node's line without indentation or newline: `%3 = add(%x, %2) : f32[s0, 4]`.
std::string print_node(const Graph& g, const Node& n);
/// The text of one attribute value.
std::string print_attr(const AttrValue& v);
/// A float as it is written in IR text: shortest round-tripping form, always recognisable as a float.
std::string print_float(double v);
/// `f32[s0, 4]`
std::string print_type(const TensorType& t);

}  // namespace autofuse
