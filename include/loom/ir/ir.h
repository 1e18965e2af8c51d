// SPDX-License-Identifier: Apache-2.0
// Everything needed to build and inspect IR.
#pragma once

#include "loom/ir/builder.h"
#include "loom/ir/cloner.h"
#include "loom/ir/device_mesh.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/equality.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"
#include "loom/ir/verifier.h"
