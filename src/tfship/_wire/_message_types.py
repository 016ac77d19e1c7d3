"""Names of the messages tfship reads and writes, for annotations.

The classes are made at run time from the shipped descriptor set (``_messages.py``), so a type
checker knows nothing of their fields: to it each name here is ``Any``. What the names give is a
signature that says which message a function takes or returns (``request: PredictRequest``, not
``request: Any``), for whoever reads it. Each is the message's own name in TensorFlow or TF
Serving, but two whose names tfship's own classes have: ``tensorflow.serving.ModelSpec`` is
``ModelSpecProto`` (the client's ``ModelSpec`` is a result) and ``tensorflow.TensorInfo``
``TensorInfoProto`` (``inspect.TensorInfo`` is what tfship reads of one).
"""

from __future__ import annotations

from typing import Any

# tensorflow
Example = Any
TensorProto = Any
TensorShapeProto = Any
TensorInfoProto = Any
SignatureDef = Any
MetaGraphDef = Any
SavedModel = Any
GraphDef = Any
NodeDef = Any
AttrValue = Any
OpDef = Any
FunctionDef = Any
FunctionDefLibrary = Any
StructuredValue = Any
SavedObjectGraph = Any
SavedConcreteFunction = Any
SavedBareConcreteFunction = Any
BundleHeaderProto = Any
BundleEntryProto = Any

# tensorflow.serving
ModelSpecProto = Any
Input = Any
PredictRequest = Any
PredictResponse = Any
ClassificationRequest = Any
ClassificationResponse = Any
ClassificationResult = Any
RegressionRequest = Any
RegressionResponse = Any
RegressionResult = Any
InferenceTask = Any
MultiInferenceRequest = Any
MultiInferenceResponse = Any
GetModelMetadataRequest = Any
GetModelMetadataResponse = Any
GetModelStatusRequest = Any
GetModelStatusResponse = Any
ReloadConfigRequest = Any
ReloadConfigResponse = Any
ModelServerConfig = Any
PredictionLog = Any
ModelConfigList = Any
LoggingConfig = Any
BatchingParameters = Any

# inference (the Open Inference Protocol)
ModelInferRequest = Any
ModelInferResponse = Any
ModelMetadataRequest = Any
ModelMetadataResponse = Any
ServerMetadataRequest = Any
ServerMetadataResponse = Any
