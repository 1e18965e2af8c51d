// SPDX-License-Identifier: Apache-2.0
// Everything needed to build fusions with ops.
#pragma once

#include "loom/ops/arith.h"
#include "loom/ops/attention.h"
#include "loom/ops/composite.h"
#include "loom/ops/factory.h"
#include "loom/ops/indexing.h"
#include "loom/ops/matmul.h"
#include "loom/ops/scaled_mm.h"
#include "loom/ops/operand.h"
#include "loom/ops/random.h"
#include "loom/ops/reduction.h"
#include "loom/ops/scalar_arith.h"
#include "loom/ops/scan.h"
#include "loom/ops/shape.h"
#include "loom/ops/size.h"
#include "loom/ops/sort.h"
#include "loom/ops/tensor_builder.h"
#include "loom/ops/type_promotion.h"
