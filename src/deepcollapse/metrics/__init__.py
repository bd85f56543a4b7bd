"""deepcollapse.metrics"""
